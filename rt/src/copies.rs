//! The other runtime copies of the process, for the writes before `exec` and `_exit`.
//!
//! `pathprof-clang` links a hidden runtime copy into every instrumented executable and shared object, and the
//! copies share no symbol. At `exit` each copy's `atexit` handler writes its modules; `exec` and `_exit` run no
//! handlers, and the pass calls only the caller's copy there (`__pathprof_image_end`). So every copy carries an
//! ELF note (`.note.pathprof`, type [`NOTE_TYPE`], retained by the linkers' garbage collection) whose
//! descriptor is the offset from itself to the copy's own write ([`for_each_other`] calls them): the caller's
//! copy finds the others with `dl_iterate_phdr`, in every loaded object's `PT_NOTE` segments, and calls each.
//! No symbol is exported, and the offset needs no dynamic relocation (the static link resolves it).

use core::ffi::{c_int, c_void};

/// The note's type (ASCII "path").
const NOTE_TYPE: u32 = 0x6874_6170;

core::arch::global_asm!(
    ".pushsection .note.pathprof,\"aR\",@note",
    ".balign 4",
    ".long 9",
    ".long 8",
    ".long {ty}",
    ".asciz \"pathprof\"",
    ".balign 4",
    "2:",
    ".quad {hook} - 2b",
    ".popsection",
    ty = const NOTE_TYPE,
    hook = sym crate::image_end_of_this_copy,
);

/// The write of one copy: [`crate::image_end_of_this_copy`]'s signature.
type Hook = extern "C" fn(u32);

struct Walk {
    own: usize,
    how: u32,
}

/// Calls the write of every other runtime copy of the process with `how`.
pub(crate) fn for_each_other(how: u32) {
    let own = crate::image_end_of_this_copy as Hook as usize;
    let mut walk = Walk { own, how };
    // SAFETY: the callback reads only the program headers the loader passes it, under the loader's lock.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut walk as *mut Walk as *mut c_void) };
}

unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the walk passed to dl_iterate_phdr; `info` describes a loaded object.
    let (walk, info) = unsafe { (&*(data as *const Walk), &*info) };
    for i in 0..usize::from(info.dlpi_phnum) {
        // SAFETY: the object has `dlpi_phnum` program headers.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        if ph.p_type != libc::PT_NOTE {
            continue;
        }
        let start = (info.dlpi_addr as usize).wrapping_add(ph.p_vaddr as usize);
        // SAFETY: a PT_NOTE segment of a loaded object is mapped for its memory size.
        let notes = unsafe { core::slice::from_raw_parts(start as *const u8, ph.p_memsz as usize) };
        for (offset, desc) in notes_of(notes) {
            if let Some(hook) = hook_at(start + offset, desc) {
                if hook as usize != walk.own {
                    hook(walk.how);
                }
            }
        }
    }
    0
}

/// The `pathprof` notes of a note segment: (offset of each descriptor in `notes`, the descriptor).
fn notes_of(notes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let word = |at: usize| notes.get(at..at + 4).map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let mut at = 0usize;
    core::iter::from_fn(move || loop {
        let (namesz, descsz, ty) = (word(at)?, word(at + 4)?, word(at + 8)?);
        let name_at = at + 12;
        let desc_at = name_at.checked_add(namesz.checked_add(3)? & !3)?;
        let next = desc_at.checked_add(descsz.checked_add(3)? & !3)?;
        let name = notes.get(name_at..name_at + namesz)?;
        let desc = notes.get(desc_at..desc_at + descsz)?;
        at = next;
        if ty == NOTE_TYPE as usize && name == b"pathprof\0" {
            return Some((desc_at, desc));
        }
    })
}

/// The write a descriptor at address `at` names.
fn hook_at(at: usize, desc: &[u8]) -> Option<Hook> {
    let offset = i64::from_ne_bytes(desc.try_into().ok()?);
    let target = (at as i64).wrapping_add(offset) as usize;
    // SAFETY: the static link wrote the offset from this descriptor to a runtime copy's `extern "C" fn(u32)`
    // of this (or a compatible) pathprof version; the note's name and type say so.
    (target != 0).then(|| unsafe { core::mem::transmute::<usize, Hook>(target) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_this_copys_note_among_others() {
        let mut seg = std::vec::Vec::new();
        // A GNU build-id note, then ours.
        for (name, ty, desc) in [(&b"GNU\0"[..], 3u32, &[7u8; 20][..]), (&b"pathprof\0"[..], NOTE_TYPE, &[1u8; 8][..])]
        {
            seg.extend_from_slice(&(name.len() as u32).to_ne_bytes());
            seg.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
            seg.extend_from_slice(&ty.to_ne_bytes());
            seg.extend_from_slice(name);
            seg.resize((seg.len() + 3) & !3, 0);
            seg.extend_from_slice(desc);
            seg.resize((seg.len() + 3) & !3, 0);
        }
        let found: std::vec::Vec<_> = notes_of(&seg).collect();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, 12 + 4 + 20 + 12 + 12);
        assert_eq!(found[0].1, &[1u8; 8]);
        // Truncated segments end the walk without reading past them.
        assert_eq!(notes_of(&seg[..seg.len() - 3]).count(), 0);
    }
}
