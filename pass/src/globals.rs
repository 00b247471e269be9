//! Module-level globals: the counter array, the metadata blob, the runtime descriptor
//! (`pathprof_format::layout::ModuleDesc`) and the constructor that registers it with the runtime.

use crate::ir;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMAtomicOrdering, LLVMAtomicRMWBinOp, LLVMLinkage};
use pathprof_format::layout::{fnv1a64, path_cache_shift, DESC_FLAG_ATOMIC, DESC_VERSION, PATH_HASH_MULTIPLIER};
use pathprof_format::meta::ModuleMeta;
use pathprof_format::symbols;
use std::ffi::{CStr, CString};

/// Constructor (and destructor) priority: 1, the sanitizers' — before every constructor a program may write
/// (101 and up), so a module is registered before any of its code runs (trace mode's ids: a user constructor
/// at 101 calling another module's function wrote it under an unassigned id, read back as the caller's) and
/// the exit-time dump is registered before C++ static objects' destructors (atexit handlers run in reverse
/// order, so the dump then sees their counts too); the destructor runs after every other.
pub(crate) const CTOR_PRIORITY: u64 = 1;

fn cstr(s: &str) -> CString {
    CString::new(s).expect("internal names contain no NUL")
}

/// The module's function `name`, made by `make` (given the name) only when the module has none yet: each
/// runtime entry point and helper is declared once per module, however many places call it.
pub(crate) fn function_once(m: LLVMModuleRef, name: &str, make: impl FnOnce(&CStr) -> LLVMValueRef) -> LLVMValueRef {
    let name = cstr(name);
    let existing = unsafe { LLVMGetNamedFunction(m, name.as_ptr()) };
    if existing.is_null() {
        make(&name)
    } else {
        existing
    }
}

/// Creates the zero-initialised `[len x i64]` counter array.
pub fn counter_array(m: LLVMModuleRef, len: u64) -> LLVMValueRef {
    zeroed_words(m, symbols::COUNTERS, len, 8)
}

/// A module-local, zero-initialised `[len x i64]` global (it lands in `.bss`) aligned to `align` bytes: the
/// counter array and table caches (sparse regions are mapped by the runtime: `Region`).
fn zeroed_words(m: LLVMModuleRef, name: &str, len: u64, align: u32) -> LLVMValueRef {
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let ty = LLVMArrayType2(LLVMInt64TypeInContext(ctx), len);
        let g = LLVMAddGlobal(m, ty, cstr(name).as_ptr());
        LLVMSetInitializer(g, LLVMConstNull(ty));
        LLVMSetLinkage(g, LLVMLinkage::LLVMInternalLinkage);
        LLVMSetAlignment(g, align);
        g
    }
}

/// The module's hand-over swap (`ModuleDesc::ip_swap`) when the interprocedural modes gave it a hand-over:
/// `swap(u64 *words)` exchanges the thread's `pathNum`, NVC and announced callee with `words[0..3]`.
fn hand_over_swap(m: LLVMModuleRef) -> Option<LLVMValueRef> {
    unsafe {
        let vars: Vec<LLVMValueRef> = [symbols::IP_PATH, symbols::IP_NVC, symbols::IP_TOKEN]
            .iter()
            .map(|n| LLVMGetNamedGlobal(m, cstr(n).as_ptr()))
            .collect();
        if vars.iter().any(|v| v.is_null()) {
            return None;
        }
        let ctx = LLVMGetModuleContext(m);
        let (voidt, i64t, ptrt) =
            (LLVMVoidTypeInContext(ctx), LLVMInt64TypeInContext(ctx), LLVMPointerTypeInContext(ctx, 0));
        let mut params = [ptrt];
        let ty = LLVMFunctionType(voidt, params.as_mut_ptr(), 1, 0);
        let f = LLVMAddFunction(m, cstr(symbols::IP_SWAP).as_ptr(), ty);
        LLVMSetLinkage(f, LLVMLinkage::LLVMInternalLinkage);
        ir::place_apart(m, f);
        for a in ["nounwind", "noinline", "noprofile"] {
            let kind = ir::attr_kind(a);
            LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, kind, 0));
        }
        let b = LLVMCreateBuilderInContext(ctx);
        LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, c"entry".as_ptr()));
        let words = LLVMGetParam(f, 0);
        for (k, &var) in vars.iter().enumerate() {
            let ty = LLVMGlobalGetValueType(var);
            let mut ix = [LLVMConstInt(i64t, k as u64, 0)];
            let slot = LLVMBuildInBoundsGEP2(b, i64t, words, ix.as_mut_ptr(), 1, c"".as_ptr());
            let (old, new) = (LLVMBuildLoad2(b, ty, var, c"".as_ptr()), LLVMBuildLoad2(b, ty, slot, c"".as_ptr()));
            LLVMBuildStore(b, new, var);
            LLVMBuildStore(b, old, slot);
        }
        LLVMBuildRetVoid(b);
        LLVMDisposeBuilder(b);
        Some(f)
    }
}

/// Emits the metadata blob, the descriptor and a constructor calling `__pathprof_register_module`.
pub fn register_module(
    m: LLVMModuleRef,
    meta: &ModuleMeta,
    counters: LLVMValueRef,
    num_counters: u64,
    atomic: bool,
    tables: &PathTables,
    regions: &[Region],
) {
    let blob = meta.encode();
    let meta_hash = fnv1a64(&blob);
    let name_hash = meta.name_hash();
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let i32t = LLVMInt32TypeInContext(ctx);
        let i64t = LLVMInt64TypeInContext(ctx);
        let ptrt = LLVMPointerTypeInContext(ctx, 0);

        let blob_global = metadata_blob(m, &blob);

        // { i32 version, i32 flags, ptr meta, i64 meta_len, i64 meta_hash, i64 name_hash,
        //   ptr counters, i64 num_counters, ptr next, ptr tables, i64 num_tables, ptr regions, i64 num_regions,
        //   ptr ip_swap }
        let flags = if atomic { DESC_FLAG_ATOMIC } else { 0 };
        let mut fields = [
            LLVMConstInt(i32t, DESC_VERSION as u64, 0),
            LLVMConstInt(i32t, flags as u64, 0),
            blob_global,
            LLVMConstInt(i64t, blob.len() as u64, 0),
            LLVMConstInt(i64t, meta_hash, 0),
            LLVMConstInt(i64t, name_hash, 0),
            counters,
            LLVMConstInt(i64t, num_counters, 0),
            LLVMConstNull(ptrt),
            tables.array.unwrap_or(LLVMConstNull(ptrt)),
            LLVMConstInt(i64t, tables.len, 0),
            region_array(m, regions),
            LLVMConstInt(i64t, regions.len() as u64, 0),
            hand_over_swap(m).unwrap_or(LLVMConstNull(ptrt)),
        ];
        let desc_init = LLVMConstStructInContext(ctx, fields.as_mut_ptr(), fields.len() as u32, 0);
        let desc = descriptor(m);
        debug_assert!(LLVMGlobalGetValueType(desc) == LLVMTypeOf(desc_init), "one descriptor type");
        LLVMSetInitializer(desc, desc_init);

        let register = runtime_function(m, symbols::REGISTER_MODULE, ptrt);
        let ctor = module_init_function(m, symbols::MODULE_CTOR, InitKind::Constructor);
        let builder = LLVMCreateBuilderInContext(ctx);
        let entry = LLVMAppendBasicBlockInContext(ctx, ctor, cstr("entry").as_ptr());
        LLVMPositionBuilderAtEnd(builder, entry);
        let mut args = [desc];
        LLVMBuildCall2(builder, LLVMGlobalGetValueType(register), register, args.as_mut_ptr(), 1, cstr("").as_ptr());
        LLVMBuildRetVoid(builder);
        // The destructor unregisters the module (its counts are merged first unless the exit dump already
        // wrote them): a `dlclose`d image must not stay on the list of a runtime copy that outlives it (the
        // program's exported copy, when the object was linked without `--exclude-libs`).
        let unregister = runtime_function(m, symbols::UNREGISTER_MODULE, ptrt);
        let dtor = module_init_function(m, symbols::MODULE_DTOR, InitKind::Destructor);
        let entry = LLVMAppendBasicBlockInContext(ctx, dtor, cstr("entry").as_ptr());
        LLVMPositionBuilderAtEnd(builder, entry);
        let mut args = [desc];
        LLVMBuildCall2(
            builder,
            LLVMGlobalGetValueType(unregister),
            unregister,
            args.as_mut_ptr(),
            1,
            cstr("").as_ptr(),
        );
        LLVMBuildRetVoid(builder);
        LLVMDisposeBuilder(builder);
        append_to_global_list(m, "llvm.global_ctors", ctor, CTOR_PRIORITY);
        append_to_global_list(m, "llvm.global_dtors", dtor, CTOR_PRIORITY);
    }
}

/// The module's runtime descriptor global (`__pathprof_desc`, `pathprof_format::layout::ModuleDesc`): created
/// zeroed on first use, so that instrumented code can name it (fork re-entries) before [`register_module`] fills
/// it in.
pub fn descriptor(m: LLVMModuleRef) -> LLVMValueRef {
    unsafe {
        let name = cstr(symbols::DESC);
        let existing = LLVMGetNamedGlobal(m, name.as_ptr());
        if !existing.is_null() {
            return existing;
        }
        let ctx = LLVMGetModuleContext(m);
        let (i32t, i64t, ptrt) =
            (LLVMInt32TypeInContext(ctx), LLVMInt64TypeInContext(ctx), LLVMPointerTypeInContext(ctx, 0));
        let mut field_types = [i32t, i32t, ptrt, i64t, i64t, i64t, ptrt, i64t, ptrt, ptrt, i64t, ptrt, i64t, ptrt];
        let desc_ty = LLVMStructTypeInContext(ctx, field_types.as_mut_ptr(), field_types.len() as u32, 0);
        let desc = LLVMAddGlobal(m, desc_ty, name.as_ptr());
        LLVMSetInitializer(desc, LLVMConstNull(desc_ty));
        LLVMSetLinkage(desc, LLVMLinkage::LLVMInternalLinkage);
        LLVMSetAlignment(desc, 8);
        desc
    }
}

/// A function's own counter array too large for the dense array (`pathprof_format::layout::SparseRegion`): the
/// runtime maps it, and the module holds only the word with its address (null until then).
pub struct Region {
    /// The function's index in the module metadata.
    pub function: u64,
    /// The pointer global holding the counters' address.
    pub cell: LLVMValueRef,
    /// Number of counters.
    pub len: u64,
}

impl Region {
    /// Emits the cell for `function` with `len` counters.
    pub fn new(m: LLVMModuleRef, function: u64, len: u64) -> Region {
        unsafe {
            let ctx = LLVMGetModuleContext(m);
            let ptrt = LLVMPointerTypeInContext(ctx, 0);
            let cell = LLVMAddGlobal(m, ptrt, cstr(symbols::REGION).as_ptr());
            LLVMSetInitializer(cell, LLVMConstNull(ptrt));
            LLVMSetLinkage(cell, LLVMLinkage::LLVMInternalLinkage);
            LLVMSetAlignment(cell, 8);
            Region { function, cell, len }
        }
    }
}

/// Declares (or finds) `ptr __pathprof_region_counters(ptr cell, i64 len)`: the runtime maps a region asked
/// for before its module registered.
pub(crate) fn region_counters_function(m: LLVMModuleRef) -> LLVMValueRef {
    function_once(m, symbols::REGION_COUNTERS, |c| unsafe {
        let ctx = LLVMGetModuleContext(m);
        let ptrt = LLVMPointerTypeInContext(ctx, 0);
        let mut params = [ptrt, LLVMInt64TypeInContext(ctx)];
        let fty = LLVMFunctionType(ptrt, params.as_mut_ptr(), 2, 0);
        let f = LLVMAddFunction(m, c.as_ptr(), fty);
        for attr in ["nounwind", "cold"] {
            LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, crate::ir::attr_kind(attr), 0));
        }
        // It returns (or ends the process without a profile): loops around it may keep counts in registers.
        crate::ir::add_string_attr(f, crate::cfg_build::RETURNS);
        f
    })
}

/// The `{ i64 function, ptr cell, i64 len }` array of the regions (a null pointer when there are none).
unsafe fn region_array(m: LLVMModuleRef, regions: &[Region]) -> LLVMValueRef {
    let ctx = LLVMGetModuleContext(m);
    let i64t = LLVMInt64TypeInContext(ctx);
    let ptrt = LLVMPointerTypeInContext(ctx, 0);
    if regions.is_empty() {
        return LLVMConstNull(ptrt);
    }
    let mut fields = [i64t, ptrt, i64t];
    let ty = LLVMStructTypeInContext(ctx, fields.as_mut_ptr(), 3, 0);
    let mut elems: Vec<LLVMValueRef> = regions
        .iter()
        .map(|r| {
            let mut v = [LLVMConstInt(i64t, r.function, 0), r.cell, LLVMConstInt(i64t, r.len, 0)];
            LLVMConstStructInContext(ctx, v.as_mut_ptr(), 3, 0)
        })
        .collect();
    internal_array(m, symbols::REGIONS, ty, &mut elems).0
}

/// A module-local constant-initialised array global `name` of `elems` (of type `elem_ty`), 8-byte aligned, and
/// its type: the runtime's region and table arrays.
unsafe fn internal_array(
    m: LLVMModuleRef,
    name: &str,
    elem_ty: LLVMTypeRef,
    elems: &mut [LLVMValueRef],
) -> (LLVMValueRef, LLVMTypeRef) {
    let arr_ty = LLVMArrayType2(elem_ty, elems.len() as u64);
    let g = LLVMAddGlobal(m, arr_ty, cstr(name).as_ptr());
    LLVMSetInitializer(g, LLVMConstArray2(elem_ty, elems.as_mut_ptr(), elems.len() as u64));
    LLVMSetLinkage(g, LLVMLinkage::LLVMInternalLinkage);
    LLVMSetAlignment(g, 8);
    (g, arr_ty)
}

/// Declares (or finds) `void name(ptr)` in the runtime.
/// The module's encoded metadata as a private constant (`symbols::META`), which the registration descriptor
/// points to: every mode's profile or trace carries the metadata it is read with.
pub(crate) fn metadata_blob(m: LLVMModuleRef, blob: &[u8]) -> LLVMValueRef {
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let blob_val = LLVMConstStringInContext2(ctx, blob.as_ptr() as *const _, blob.len(), 1);
        let blob_global = LLVMAddGlobal(m, LLVMTypeOf(blob_val), cstr(symbols::META).as_ptr());
        LLVMSetInitializer(blob_global, blob_val);
        LLVMSetGlobalConstant(blob_global, 1);
        LLVMSetLinkage(blob_global, LLVMLinkage::LLVMPrivateLinkage);
        LLVMSetAlignment(blob_global, 8);
        blob_global
    }
}

pub(crate) unsafe fn runtime_function(m: LLVMModuleRef, name: &str, ptrt: LLVMTypeRef) -> LLVMValueRef {
    function_once(m, name, |c| {
        let ctx = LLVMGetModuleContext(m);
        let mut params = [ptrt];
        let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 1, 0);
        LLVMAddFunction(m, c.as_ptr(), fty)
    })
}

/// Where a module constructor or destructor goes: [`module_init_function`].
#[derive(Clone, Copy)]
pub(crate) enum InitKind {
    Constructor,
    Destructor,
}

/// Adds the module's internal `void name()` constructor or destructor (LLVM renames it on collision), in the
/// section clang gives its own static initialisers on ELF (`.text.startup`; destructors `.text.exit`, as GCC's),
/// away from the program's functions. In `.text` it followed the module's last function, and a function whose
/// body the optimiser proved unreachable (undefined behaviour: cmocka's test of a null-pointer store) is
/// empty, so a call of it ran on into the constructor — which registered the module a second time — where the
/// plain build runs on into the next object's code.
pub(crate) unsafe fn module_init_function(m: LLVMModuleRef, name: &str, kind: InitKind) -> LLVMValueRef {
    let ctx = LLVMGetModuleContext(m);
    let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), std::ptr::null_mut(), 0, 0);
    let f = LLVMAddFunction(m, cstr(name).as_ptr(), fty);
    LLVMSetLinkage(f, LLVMLinkage::LLVMInternalLinkage);
    let section = match kind {
        InitKind::Constructor => c".text.startup",
        InitKind::Destructor => c".text.exit",
    };
    ir::set_elf_section(m, f, section);
    f
}

/// Appends `{ priority, f, null }` to `llvm.global_ctors` or `llvm.global_dtors` (`list`), keeping existing
/// entries.
pub(crate) unsafe fn append_to_global_list(m: LLVMModuleRef, list: &str, f: LLVMValueRef, priority: u64) {
    let ctx = LLVMGetModuleContext(m);
    let i32t = LLVMInt32TypeInContext(ctx);
    let ptrt = LLVMPointerTypeInContext(ctx, 0);
    let mut elem_types = [i32t, ptrt, ptrt];
    let elem_ty = LLVMStructTypeInContext(ctx, elem_types.as_mut_ptr(), 3, 0);
    let name = cstr(list);
    let mut elems = Vec::new();
    let existing = LLVMGetNamedGlobal(m, name.as_ptr());
    if !existing.is_null() {
        let init = LLVMGetInitializer(existing);
        if !init.is_null() {
            for i in 0..LLVMGetNumOperands(init) {
                elems.push(LLVMGetOperand(init, i as u32));
            }
        }
        LLVMDeleteGlobal(existing);
    }
    let mut fields = [LLVMConstInt(i32t, priority, 0), f, LLVMConstNull(ptrt)];
    elems.push(LLVMConstStructInContext(ctx, fields.as_mut_ptr(), 3, 0));
    let arr_ty = LLVMArrayType2(elem_ty, elems.len() as u64);
    let arr = LLVMConstArray2(elem_ty, elems.as_mut_ptr(), elems.len() as u64);
    let g = LLVMAddGlobal(m, arr_ty, name.as_ptr());
    LLVMSetInitializer(g, arr);
    LLVMSetLinkage(g, LLVMLinkage::LLVMAppendingLinkage);
}

/// The module's `PathTable` array (`pathprof_format::layout::PathTable`): one table per function whose paths
/// are counted in a run-time hash table, zeroed except `function` (its index in the metadata) and a zeroed
/// cache of its own unless the build asked for none (see `PathTable::cache`).
pub struct PathTables {
    array: Option<LLVMValueRef>,
    ty: Option<LLVMTypeRef>,
    len: u64,
    /// Each table's cache global, and the pairs in every cache (0: no caches).
    caches: Vec<LLVMValueRef>,
    cache_pairs: u64,
}

impl PathTables {
    /// Emits the array and, with `cache_pairs > 0` (a power of two), the caches (nothing when no function is
    /// hashed).
    pub fn new(m: LLVMModuleRef, functions: &[u64], cache_pairs: u64) -> PathTables {
        if functions.is_empty() {
            return PathTables { array: None, ty: None, len: 0, caches: Vec::new(), cache_pairs: 0 };
        }
        unsafe {
            let ctx = LLVMGetModuleContext(m);
            let i64t = LLVMInt64TypeInContext(ctx);
            let ptrt = LLVMPointerTypeInContext(ctx, 0);
            let caches: Vec<LLVMValueRef> = if cache_pairs == 0 {
                Vec::new()
            } else {
                // A cache line per 4 pairs, none shared with other data.
                (0..functions.len()).map(|_| zeroed_words(m, symbols::TABLE_CACHE, 2 * cache_pairs, 64)).collect()
            };
            // { i64 function, i64 lock, ptr slots, i64 capacity, i64 len, ptr cache, i64 cache_len }
            let mut fields = [i64t, i64t, ptrt, i64t, i64t, ptrt, i64t];
            let table_ty = LLVMStructTypeInContext(ctx, fields.as_mut_ptr(), fields.len() as u32, 0);
            let mut elems: Vec<LLVMValueRef> = functions
                .iter()
                .enumerate()
                .map(|(i, &f)| {
                    let (cache, pairs) = match caches.get(i) {
                        Some(&g) => (g, cache_pairs),
                        None => (LLVMConstNull(ptrt), 0),
                    };
                    let mut v = [
                        LLVMConstInt(i64t, f, 0),
                        LLVMConstInt(i64t, 0, 0),
                        LLVMConstNull(ptrt),
                        LLVMConstInt(i64t, 0, 0),
                        LLVMConstInt(i64t, 0, 0),
                        cache,
                        LLVMConstInt(i64t, pairs, 0),
                    ];
                    LLVMConstStructInContext(ctx, v.as_mut_ptr(), v.len() as u32, 0)
                })
                .collect();
            let (g, arr_ty) = internal_array(m, symbols::TABLES, table_ty, &mut elems);
            PathTables { array: Some(g), ty: Some(arr_ty), len: functions.len() as u64, caches, cache_pairs }
        }
    }

    /// Constant pointer to table `i`.
    pub fn table(&self, i: usize) -> LLVMValueRef {
        let (g, ty) = (self.array.expect("a hashed function has a table"), self.ty.expect("typed"));
        unsafe {
            let i64t = LLVMInt64TypeInContext(LLVMGetTypeContext(ty));
            let mut ix = [LLVMConstInt(i64t, 0, 0), LLVMConstInt(i64t, i as u64, 0)];
            LLVMConstInBoundsGEP2(ty, g, ix.as_mut_ptr(), 2)
        }
    }

    /// How instrumented code updates table `i`: through its cache when it has one, else by calling the runtime.
    pub fn update(&self, m: LLVMModuleRef, i: usize, atomic: bool) -> TableUpdate {
        let table = self.table(i);
        match self.caches.get(i) {
            Some(&cache) => {
                TableUpdate { table, callee: cached_add_function(m, atomic), cache: Some((cache, self.cache_pairs)) }
            }
            None => TableUpdate { table, callee: path_add_function(m, atomic), cache: None },
        }
    }
}

/// One path table's update, as emitted at every point where a function records a path in it.
#[derive(Copy, Clone)]
pub struct TableUpdate {
    table: LLVMValueRef,
    /// `__pathprof_path_add(table, path, delta)` (or `_plain`), or [`cached_add_function`].
    callee: LLVMValueRef,
    /// The table's cache global and its number of pairs.
    cache: Option<(LLVMValueRef, u64)>,
}

impl TableUpdate {
    /// Emits `count[path] += delta` at the builder's position.
    pub fn build(&self, b: LLVMBuilderRef, path: LLVMValueRef, delta: LLVMValueRef) {
        unsafe {
            let ty = LLVMGlobalGetValueType(self.callee);
            match self.cache {
                Some((cache, pairs)) => {
                    let i64t = LLVMTypeOf(path);
                    let shift = LLVMConstInt(i64t, u64::from(path_cache_shift(pairs)), 0);
                    let mask = LLVMConstInt(i64t, pairs - 1, 0);
                    let mut args = [self.table, cache, shift, mask, path, delta];
                    LLVMBuildCall2(b, ty, self.callee, args.as_mut_ptr(), args.len() as u32, c"".as_ptr());
                }
                None => {
                    let mut args = [self.table, path, delta];
                    LLVMBuildCall2(b, ty, self.callee, args.as_mut_ptr(), args.len() as u32, c"".as_ptr());
                }
            }
        }
    }
}

/// Defines (once per module) `internal void __pathprof_cached_add(ptr table, ptr cache, i64 shift, i64 mask,
/// i64 path, i64 delta)`, `alwaysinline`: the cache fast path of `PathTable::cache`, inlined into every caller
/// with the cache, shift and mask constant:
///
/// ```text
/// i = layout::path_cache_slot(path, mask + 1)            // (path × multiplier) >> shift & mask
/// if cache[i] == path { cache[mask + 1 + i] += delta } else { __pathprof_path_cache_miss(table, path, delta) }
/// ```
///
/// Once inlined that is a multiply, a shift, a compare and an add to memory at a constant offset from the
/// compared word (the mask is known to be a no-op). A function rather than inline IR so that emitting it never
/// splits the block being instrumented (the emitters hold on to blocks and PHI predecessors); the inliner then
/// puts the branch in place.
///
/// With `atomic`, `__pathprof_cached_add_atomic` for atomic builds, whose pairs are sticky: the path word holds
/// path + 1 and is read with an atomic load (claims store it concurrently; a plain `mov` on x86-64), a hit is
/// an atomic add (`lock add`), and a miss calls `__pathprof_path_cache_claim`. The runtime's table update (a
/// probe and a compare-and-swap loop behind a call) runs only on a miss.
fn cached_add_function(m: LLVMModuleRef, atomic: bool) -> LLVMValueRef {
    let name = if atomic { symbols::CACHED_ADD_ATOMIC } else { symbols::CACHED_ADD };
    function_once(m, name, |name| unsafe {
        let ctx = LLVMGetModuleContext(m);
        let i64t = LLVMInt64TypeInContext(ctx);
        let ptrt = LLVMPointerTypeInContext(ctx, 0);
        let mut params = [ptrt, ptrt, i64t, i64t, i64t, i64t];
        let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), params.len() as u32, 0);
        let f = LLVMAddFunction(m, name.as_ptr(), fty);
        LLVMSetLinkage(f, LLVMLinkage::LLVMInternalLinkage);
        for attr in ["alwaysinline", "nounwind"] {
            LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, crate::ir::attr_kind(attr), 0));
        }
        crate::ir::add_string_attr(f, crate::cfg_build::RETURNS);
        let p = |i| LLVMGetParam(f, i);
        let (table, cache, shift, mask, path, delta) = (p(0), p(1), p(2), p(3), p(4), p(5));
        let entry = LLVMAppendBasicBlockInContext(ctx, f, c"entry".as_ptr());
        let hit = LLVMAppendBasicBlockInContext(ctx, f, c"hit".as_ptr());
        let miss = LLVMAppendBasicBlockInContext(ctx, f, c"miss".as_ptr());
        let b = LLVMCreateBuilderInContext(ctx);
        LLVMPositionBuilderAtEnd(b, entry);
        let product = LLVMBuildMul(b, path, LLVMConstInt(i64t, PATH_HASH_MULTIPLIER, 0), c"".as_ptr());
        let slot = LLVMBuildAnd(b, LLVMBuildLShr(b, product, shift, c"".as_ptr()), mask, c"pathprof.slot".as_ptr());
        let mut ix = [slot];
        let path_ptr = LLVMBuildInBoundsGEP2(b, i64t, cache, ix.as_mut_ptr(), 1, c"".as_ptr());
        let cached = LLVMBuildLoad2(b, i64t, path_ptr, c"".as_ptr());
        let wanted = if atomic {
            LLVMSetOrdering(cached, LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic);
            LLVMSetAlignment(cached, 8);
            LLVMBuildAdd(b, path, LLVMConstInt(i64t, 1, 0), c"".as_ptr())
        } else {
            path
        };
        let is_hit = LLVMBuildICmp(b, inkwell::llvm_sys::LLVMIntPredicate::LLVMIntEQ, cached, wanted, c"".as_ptr());
        LLVMBuildCondBr(b, is_hit, hit, miss);
        LLVMPositionBuilderAtEnd(b, hit);
        let mut len = [LLVMBuildAdd(b, mask, LLVMConstInt(i64t, 1, 0), c"".as_ptr())];
        let count_ptr = LLVMBuildInBoundsGEP2(b, i64t, path_ptr, len.as_mut_ptr(), 1, c"".as_ptr());
        if atomic {
            let (add, order) =
                (LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpAdd, LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic);
            LLVMBuildAtomicRMW(b, add, count_ptr, delta, order, 0);
        } else {
            let count = LLVMBuildLoad2(b, i64t, count_ptr, c"".as_ptr());
            LLVMBuildStore(b, LLVMBuildAdd(b, count, delta, c"".as_ptr()), count_ptr);
        }
        LLVMBuildRetVoid(b);
        LLVMPositionBuilderAtEnd(b, miss);
        let miss_fn = cache_miss_function(m, atomic);
        let mut args = [table, path, delta];
        LLVMBuildCall2(b, LLVMGlobalGetValueType(miss_fn), miss_fn, args.as_mut_ptr(), 3, c"".as_ptr());
        LLVMBuildRetVoid(b);
        LLVMDisposeBuilder(b);
        f
    })
}

/// Declares `void __pathprof_path_cache_miss(ptr table, i64 path, i64 delta)` (with `atomic`, its sticky twin
/// `__pathprof_path_cache_claim`), `cold`: calls to it are the unlikely side of the cache test, so LLVM lays the
/// hit inline and the call out of line.
fn cache_miss_function(m: LLVMModuleRef, atomic: bool) -> LLVMValueRef {
    let name = if atomic { symbols::PATH_CACHE_CLAIM } else { symbols::PATH_CACHE_MISS };
    table_update_function(m, name, &["nounwind", "cold"])
}

/// Declares (once) a runtime function `void name(ptr table, i64 path, i64 delta)` with function attributes
/// `attrs` (the runtime never unwinds: every one is `nounwind`, so callers keep plain `call`s). Each returns,
/// which [`crate::cfg_build::RETURNS`] tells the pass itself: a loop that counts in a table is still a region
/// where counts may stay in registers ([`crate::promote::flush_local_counts`]).
fn table_update_function(m: LLVMModuleRef, name: &str, attrs: &[&str]) -> LLVMValueRef {
    function_once(m, name, |name| unsafe {
        let ctx = LLVMGetModuleContext(m);
        let i64t = LLVMInt64TypeInContext(ctx);
        let mut params = [LLVMPointerTypeInContext(ctx, 0), i64t, i64t];
        let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 3, 0);
        let f = LLVMAddFunction(m, name.as_ptr(), fty);
        for attr in attrs {
            LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, crate::ir::attr_kind(attr), 0));
        }
        crate::ir::add_string_attr(f, crate::cfg_build::RETURNS);
        f
    })
}

/// Declares `void __pathprof_path_add(ptr table, i64 path, i64 delta)` (the runtime's hash-table update), or
/// with `atomic == false` its `_plain` twin, whose fast path adds without a locked instruction (like the
/// non-atomic counters: exact single-threaded, flagged when the program ran threads).
fn path_add_function(m: LLVMModuleRef, atomic: bool) -> LLVMValueRef {
    table_update_function(m, if atomic { symbols::PATH_ADD } else { symbols::PATH_ADD_PLAIN }, &["nounwind"])
}
