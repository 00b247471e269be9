//! Module-level globals: the counter array, the metadata blob, the runtime descriptor
//! (`pathprof_format::layout::ModuleDesc`) and the constructor that registers it with the runtime.

use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMLinkage;
use pathprof_format::layout::{fnv1a64, DESC_FLAG_ATOMIC, DESC_VERSION};
use pathprof_format::meta::ModuleMeta;
use std::ffi::CString;

/// Constructor priority: early, so the exit-time dump is registered before C++ static objects' destructors
/// (atexit handlers run in reverse order, so the dump then sees their counts too).
const CTOR_PRIORITY: u64 = 101;

fn cstr(s: &str) -> CString {
    CString::new(s).expect("internal names contain no NUL")
}

/// Creates the zero-initialised `[len x i64]` counter array.
pub fn counter_array(m: LLVMModuleRef, len: u64) -> LLVMValueRef {
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let ty = LLVMArrayType2(LLVMInt64TypeInContext(ctx), len);
        let g = LLVMAddGlobal(m, ty, cstr("__pathprof_counters").as_ptr());
        LLVMSetInitializer(g, LLVMConstNull(ty));
        LLVMSetLinkage(g, LLVMLinkage::LLVMInternalLinkage);
        LLVMSetAlignment(g, 8);
        g
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
    let name_hash = fnv1a64(meta.module_name.as_bytes());
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let i32t = LLVMInt32TypeInContext(ctx);
        let i64t = LLVMInt64TypeInContext(ctx);
        let ptrt = LLVMPointerTypeInContext(ctx, 0);

        let blob_val = LLVMConstStringInContext2(ctx, blob.as_ptr() as *const _, blob.len(), 1);
        let blob_global = LLVMAddGlobal(m, LLVMTypeOf(blob_val), cstr("__pathprof_meta").as_ptr());
        LLVMSetInitializer(blob_global, blob_val);
        LLVMSetGlobalConstant(blob_global, 1);
        LLVMSetLinkage(blob_global, LLVMLinkage::LLVMPrivateLinkage);
        LLVMSetAlignment(blob_global, 8);

        // { i32 version, i32 flags, ptr meta, i64 meta_len, i64 meta_hash, i64 name_hash,
        //   ptr counters, i64 num_counters, ptr next, ptr tables, i64 num_tables, ptr regions, i64 num_regions }
        let mut field_types = [i32t, i32t, ptrt, i64t, i64t, i64t, ptrt, i64t, ptrt, ptrt, i64t, ptrt, i64t];
        let desc_ty = LLVMStructTypeInContext(ctx, field_types.as_mut_ptr(), field_types.len() as u32, 0);
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
        ];
        let desc_init = LLVMConstStructInContext(ctx, fields.as_mut_ptr(), fields.len() as u32, 0);
        let desc = LLVMAddGlobal(m, desc_ty, cstr("__pathprof_desc").as_ptr());
        LLVMSetInitializer(desc, desc_init);
        LLVMSetLinkage(desc, LLVMLinkage::LLVMInternalLinkage);
        LLVMSetAlignment(desc, 8);

        let register = runtime_function(m, "__pathprof_register_module", ptrt);
        let ctor = internal_void_function(m, "__pathprof_module_ctor");
        let builder = LLVMCreateBuilderInContext(ctx);
        let entry = LLVMAppendBasicBlockInContext(ctx, ctor, cstr("entry").as_ptr());
        LLVMPositionBuilderAtEnd(builder, entry);
        let mut args = [desc];
        LLVMBuildCall2(builder, LLVMGlobalGetValueType(register), register, args.as_mut_ptr(), 1, cstr("").as_ptr());
        LLVMBuildRetVoid(builder);
        LLVMDisposeBuilder(builder);
        append_to_global_ctors(m, ctor, CTOR_PRIORITY);
    }
}

/// A path-mode function's own counter array (`pathprof_format::layout::SparseRegion`): zero-initialised, so
/// it lands in `.bss` and only the pages of executed paths are ever committed; page-aligned for `mincore`.
pub struct Region {
    /// The function's index in the module metadata.
    pub function: u64,
    /// The `[len x i64]` global.
    pub global: LLVMValueRef,
    /// Number of counters.
    pub len: u64,
}

impl Region {
    /// Emits the array for `function` with `len` counters.
    pub fn new(m: LLVMModuleRef, function: u64, len: u64) -> Region {
        unsafe {
            let ctx = LLVMGetModuleContext(m);
            let ty = LLVMArrayType2(LLVMInt64TypeInContext(ctx), len);
            let g = LLVMAddGlobal(m, ty, cstr("__pathprof_region").as_ptr());
            LLVMSetInitializer(g, LLVMConstNull(ty));
            LLVMSetLinkage(g, LLVMLinkage::LLVMInternalLinkage);
            LLVMSetAlignment(g, 4096);
            Region { function, global: g, len }
        }
    }
}

/// The `{ i64 function, ptr counters, i64 len }` array of the regions (a null pointer when there are none).
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
            let mut v = [LLVMConstInt(i64t, r.function, 0), r.global, LLVMConstInt(i64t, r.len, 0)];
            LLVMConstStructInContext(ctx, v.as_mut_ptr(), 3, 0)
        })
        .collect();
    let arr_ty = LLVMArrayType2(ty, elems.len() as u64);
    let g = LLVMAddGlobal(m, arr_ty, cstr("__pathprof_regions").as_ptr());
    LLVMSetInitializer(g, LLVMConstArray2(ty, elems.as_mut_ptr(), elems.len() as u64));
    LLVMSetLinkage(g, LLVMLinkage::LLVMInternalLinkage);
    LLVMSetAlignment(g, 8);
    g
}

/// Declares (or finds) `void name(ptr)` in the runtime.
unsafe fn runtime_function(m: LLVMModuleRef, name: &str, ptrt: LLVMTypeRef) -> LLVMValueRef {
    let c = cstr(name);
    let existing = LLVMGetNamedFunction(m, c.as_ptr());
    if !existing.is_null() {
        return existing;
    }
    let ctx = LLVMGetModuleContext(m);
    let mut params = [ptrt];
    let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 1, 0);
    LLVMAddFunction(m, c.as_ptr(), fty)
}

/// Adds an internal `void name()` function (LLVM renames it on collision).
unsafe fn internal_void_function(m: LLVMModuleRef, name: &str) -> LLVMValueRef {
    let ctx = LLVMGetModuleContext(m);
    let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), std::ptr::null_mut(), 0, 0);
    let f = LLVMAddFunction(m, cstr(name).as_ptr(), fty);
    LLVMSetLinkage(f, LLVMLinkage::LLVMInternalLinkage);
    f
}

/// Appends `{ priority, f, null }` to `llvm.global_ctors`, keeping existing entries.
unsafe fn append_to_global_ctors(m: LLVMModuleRef, f: LLVMValueRef, priority: u64) {
    let ctx = LLVMGetModuleContext(m);
    let i32t = LLVMInt32TypeInContext(ctx);
    let ptrt = LLVMPointerTypeInContext(ctx, 0);
    let mut elem_types = [i32t, ptrt, ptrt];
    let elem_ty = LLVMStructTypeInContext(ctx, elem_types.as_mut_ptr(), 3, 0);
    let name = cstr("llvm.global_ctors");
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

/// The module's `PathTable` array (`pathprof_format::layout::PathTable`): one zeroed table per function whose
/// paths are counted in a run-time hash table, `function` set to its index in the metadata.
pub struct PathTables {
    array: Option<LLVMValueRef>,
    ty: Option<LLVMTypeRef>,
    len: u64,
}

impl PathTables {
    /// Emits the array (nothing when no function is hashed).
    pub fn new(m: LLVMModuleRef, functions: &[u64]) -> PathTables {
        if functions.is_empty() {
            return PathTables { array: None, ty: None, len: 0 };
        }
        unsafe {
            let ctx = LLVMGetModuleContext(m);
            let i64t = LLVMInt64TypeInContext(ctx);
            let ptrt = LLVMPointerTypeInContext(ctx, 0);
            // { i64 function, i64 lock, ptr slots, i64 capacity, i64 len }
            let mut fields = [i64t, i64t, ptrt, i64t, i64t];
            let table_ty = LLVMStructTypeInContext(ctx, fields.as_mut_ptr(), 5, 0);
            let mut elems: Vec<LLVMValueRef> = functions
                .iter()
                .map(|&f| {
                    let mut v = [
                        LLVMConstInt(i64t, f, 0),
                        LLVMConstInt(i64t, 0, 0),
                        LLVMConstNull(ptrt),
                        LLVMConstInt(i64t, 0, 0),
                        LLVMConstInt(i64t, 0, 0),
                    ];
                    LLVMConstStructInContext(ctx, v.as_mut_ptr(), 5, 0)
                })
                .collect();
            let arr_ty = LLVMArrayType2(table_ty, elems.len() as u64);
            let g = LLVMAddGlobal(m, arr_ty, cstr("__pathprof_tables").as_ptr());
            LLVMSetInitializer(g, LLVMConstArray2(table_ty, elems.as_mut_ptr(), elems.len() as u64));
            LLVMSetLinkage(g, LLVMLinkage::LLVMInternalLinkage);
            LLVMSetAlignment(g, 8);
            PathTables { array: Some(g), ty: Some(arr_ty), len: functions.len() as u64 }
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
}

/// Declares `void __pathprof_path_add(ptr table, i64 path, i64 delta)` (the runtime's hash-table update), or
/// with `atomic == false` its `_plain` twin, whose fast path adds without a locked instruction (like the
/// non-atomic counters: exact single-threaded, flagged when the program ran threads).
pub fn path_add_function(m: LLVMModuleRef, atomic: bool) -> LLVMValueRef {
    unsafe {
        let name = cstr(if atomic { "__pathprof_path_add" } else { "__pathprof_path_add_plain" });
        let existing = LLVMGetNamedFunction(m, name.as_ptr());
        if !existing.is_null() {
            return existing;
        }
        let ctx = LLVMGetModuleContext(m);
        let i64t = LLVMInt64TypeInContext(ctx);
        let mut params = [LLVMPointerTypeInContext(ctx, 0), i64t, i64t];
        let fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 3, 0);
        let f = LLVMAddFunction(m, name.as_ptr(), fty);
        // The runtime never unwinds: let callers keep their plain `call`s.
        let nounwind = crate::ir::attr_kind("nounwind");
        LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, nounwind, 0));
        f
    }
}
