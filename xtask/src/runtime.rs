//! `cargo xtask runtime`: writes `runtime/oad_revolve_snapshots.f90`, the
//! snapshot store of the Fortran run-time of checkpointed loops, from the
//! table of the types a snapshot holds (`xaif_cfrev::runtime::HELD_TYPES`,
//! which also decides what xaifb refuses to checkpoint).
//!
//! The module is generated because it is large and regular: a specific
//! store and restore procedure for each of 16 types and kinds and each
//! rank from 0 to 7 (256 procedures behind the generic interfaces
//! `oad_revolve_store` and `oad_revolve_restore`); Fortran 2008 has no
//! rank-generic dummy argument. The file is checked in, so that an OpenAD
//! build needs nothing but a Fortran compiler; a test fails when it is not
//! what this generator writes.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use xaif_cfrev::runtime::{Holding, HELD_TYPES};

/// Where the generated module goes, relative to the repository root.
pub const PATH: &str = "runtime/oad_revolve_snapshots.f90";

/// Highest rank a snapshot variable can have (XAIF's `seven_tensor`).
const MAX_RANK: usize = 7;

/// Writes the module under the repository root `root`.
pub fn run(root: &Path) -> Result<()> {
    let path = root.join(PATH);
    std::fs::write(&path, module()).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// `(:,:,:)` for rank 3, nothing for a scalar.
fn dims(rank: usize) -> String {
    if rank == 0 {
        String::new()
    } else {
        format!("({})", vec![":"; rank].join(","))
    }
}

/// The text of `runtime/oad_revolve_snapshots.f90`.
pub fn module() -> String {
    let mut s = String::new();
    s.push_str(HEAD);
    let names: Vec<String> = HELD_TYPES
        .iter()
        .flat_map(|h| (0..=MAX_RANK).map(move |r| format!("{}_{r}", h.tag)))
        .collect();
    for verb in ["store", "restore"] {
        let _ = writeln!(s, "  interface oad_revolve_{verb}");
        for chunk in names.chunks(4) {
            let list: Vec<String> = chunk.iter().map(|n| format!("{verb}_{n}")).collect();
            let _ = writeln!(s, "    module procedure {}", list.join(", "));
        }
        let _ = writeln!(s, "  end interface oad_revolve_{verb}\n");
    }
    let width = HELD_TYPES
        .iter()
        .map(|h| h.fortran.len())
        .max()
        .unwrap_or(1);
    let _ = writeln!(
        s,
        "  ! The types, by the code each value is recorded with (messages)."
    );
    let _ = writeln!(
        s,
        "  character(len={width}), parameter :: type_names({}) = [character(len={width}) :: &",
        HELD_TYPES.len()
    );
    for (k, h) in HELD_TYPES.iter().enumerate() {
        let sep = if k + 1 == HELD_TYPES.len() {
            "]"
        } else {
            ", &"
        };
        let _ = writeln!(s, "       '{}'{sep}", h.fortran);
    }
    s.push_str(STORAGE);
    for (k, h) in HELD_TYPES.iter().enumerate() {
        let code = k + 1;
        let _ = writeln!(
            s,
            "  ! ---------------------------------------- {}\n",
            h.fortran
        );
        for rank in 0..=MAX_RANK {
            specifics(&mut s, h.fortran, h.tag, h.holding, code, rank);
        }
    }
    s.push_str("end module oad_revolve_snapshots\n");
    s
}

/// The store and restore procedures of one type and rank.
fn specifics(s: &mut String, fortran: &str, tag: &str, holding: Holding, code: usize, rank: usize) {
    let d = dims(rank);
    // The stored part: the value, or the value part of an active variable;
    // `mold` has its type (a local of the value part's kind for an active
    // variable: gfortran 12 fails on a component array as the mold).
    let (part, mold, local) = if holding == Holding::Active {
        ("x%v", "v", "\n    real(kind(x%v)) :: v")
    } else {
        ("x", "x", "")
    };
    // gfortran 12's transfer of a component array (`x%v`) takes the bytes
    // the array spans, derivatives included: an array constructor makes
    // the values contiguous first.
    let stored = if holding == Holding::Active && rank > 0 {
        format!("[{part}]")
    } else {
        part.to_string()
    };
    let count = if rank == 0 {
        format!("storage_size({mold}, int64) / 8")
    } else {
        format!("size(x, kind=int64) * (storage_size({mold}, int64) / 8)")
    };
    let back = match rank {
        0 => format!("transfer(take({code}, {count}), {mold})"),
        1 => format!("transfer(take({code}, {count}), {mold}, size(x))"),
        _ => format!("reshape(transfer(take({code}, {count}), {mold}, size(x)), shape(x))"),
    };
    let _ = write!(
        s,
        "  subroutine store_{tag}_{rank}(x)\n    {fortran}, intent(in) :: x{d}\n    \
         call put({code}, transfer({stored}, byte))\n  end subroutine store_{tag}_{rank}\n\n  \
         subroutine restore_{tag}_{rank}(x)\n    {fortran}, intent(inout) :: x{d}{local}\n    \
         {part} = {back}\n  end subroutine restore_{tag}_{rank}\n\n"
    );
}

const HEAD: &str = "\
! The snapshot store of xaifb's checkpointed loops (docs/checkpointing.md):
! the generic calls oad_revolve_store(x) and oad_revolve_restore(x) for
! every type, kind and rank (0 to 7) a loop state can have, strings of any
! length and OpenAD's active type (its value part) included; the frames
! the schedule (module oad_revolve) opens, reads and drops; the number of
! snapshots and bytes held.
!
! GENERATED by `cargo xtask runtime` from the table of the types a snapshot
! holds (crate xaif-cfrev, src/runtime.rs), which also decides what xaifb
! refuses to checkpoint: change the generator, not this file. A test fails
! when this file is not what the generator writes.
!
! Values are kept as their bits (transfer), so a restore gives back exactly
! what was stored. Each value is recorded with its type and size; a restore
! of another type or size than the value it reads, or of more values than
! the snapshot holds, stops the program with a message.
module oad_revolve_snapshots
  use iso_fortran_env, only: int8, int16, int32, int64, real32, real64, &
       real128, error_unit
  use OAD_active, only: active
  implicit none
  private

  ! The kind of the run-time's counters: steps, snapshots, counts.
  integer, parameter, public :: oad_revolve_ik = int64

  public :: oad_revolve_store, oad_revolve_restore, &
       oad_revolve_snapshots_held, oad_revolve_snapshot_bytes, &
       oad_revolve_frame_open, oad_revolve_frame_read, &
       oad_revolve_frames_drop, oad_revolve_frame_drop_at, &
       oad_revolve_frames_clear

";

const STORAGE: &str = "
  ! A mold for transfer: values become bytes.
  integer(int8), parameter :: byte(1) = 0_int8

  ! The values of every snapshot as bytes, in store order.
  integer(int8), allocatable, save :: bytes(:)
  integer(int64), save :: nbytes = 0
  ! Per value stored: its type's code and its size in bytes.
  integer(int64), allocatable, save :: items(:,:)
  integer(int64), save :: nitems = 0
  ! Per snapshot (frame): nbytes and nitems where it begins.
  integer(int64), allocatable, save :: frames(:,:)
  integer(int64), save :: nframes = 0
  ! Where the next restore reads: the bytes and values left before it.
  integer(int64), save :: rbyte = 0, ritem = 0

contains

  subroutine fail(message)
    character(len=*), intent(in) :: message
    write (error_unit, '(A,A)') 'oad_revolve: ', message
    error stop 1
  end subroutine fail

  ! A new snapshot begins on top of the others (a store action).
  subroutine oad_revolve_frame_open()
    integer(int64), allocatable :: grown(:,:)
    if (.not. allocated(frames)) allocate(frames(2, 8))
    if (nframes == size(frames, 2, kind=int64)) then
      allocate(grown(2, 2 * nframes))
      grown(:, 1:nframes) = frames(:, 1:nframes)
      call move_alloc(grown, frames)
    end if
    nframes = nframes + 1
    frames(:, nframes) = [nbytes, nitems]
  end subroutine oad_revolve_frame_open

  ! The latest snapshot is read by the restores that follow (a restore
  ! action); it stays held.
  subroutine oad_revolve_frame_read()
    if (nframes == 0) call fail('a restore without a snapshot')
    rbyte = nbytes
    ritem = nitems
  end subroutine oad_revolve_frame_read

  ! The latest `n` snapshots are dropped.
  subroutine oad_revolve_frames_drop(n)
    integer, intent(in) :: n
    integer :: k
    do k = 1, n
      if (nframes == 0) call fail('a drop of a snapshot not held')
      nbytes = frames(1, nframes)
      nitems = frames(2, nframes)
      nframes = nframes - 1
    end do
  end subroutine oad_revolve_frames_drop

  ! The snapshot `depth` below the newest (0: the newest) is dropped and
  ! the newer ones move down (online checkpointing drops a snapshot that
  ! is no longer needed from the middle of those it holds).
  subroutine oad_revolve_frame_drop_at(depth)
    integer, intent(in) :: depth
    integer(int64) :: k, j, b0, b1, i0, i1, nb, ni
    if (depth < 0 .or. depth >= nframes) call fail('a drop of a snapshot not held')
    k = nframes - depth
    b0 = frames(1, k)
    i0 = frames(2, k)
    if (k < nframes) then
      b1 = frames(1, k + 1)
      i1 = frames(2, k + 1)
    else
      b1 = nbytes
      i1 = nitems
    end if
    nb = b1 - b0
    ni = i1 - i0
    if (nb > 0 .and. nbytes > b1) bytes(b0 + 1:nbytes - nb) = bytes(b1 + 1:nbytes)
    if (ni > 0 .and. nitems > i1) items(:, i0 + 1:nitems - ni) = items(:, i1 + 1:nitems)
    do j = k, nframes - 1
      frames(1, j) = frames(1, j + 1) - nb
      frames(2, j) = frames(2, j + 1) - ni
    end do
    nbytes = nbytes - nb
    nitems = nitems - ni
    nframes = nframes - 1
  end subroutine oad_revolve_frame_drop_at

  ! Every snapshot is dropped and the memory released (a schedule
  ! abandoned).
  subroutine oad_revolve_frames_clear()
    nbytes = 0
    nitems = 0
    nframes = 0
    rbyte = 0
    ritem = 0
    if (allocated(bytes)) deallocate(bytes)
    if (allocated(items)) deallocate(items)
    if (allocated(frames)) deallocate(frames)
  end subroutine oad_revolve_frames_clear

  ! Snapshots held, of every loop instance.
  function oad_revolve_snapshots_held() result(n)
    integer(oad_revolve_ik) :: n
    n = nframes
  end function oad_revolve_snapshots_held

  ! Bytes of values they hold.
  function oad_revolve_snapshot_bytes() result(n)
    integer(oad_revolve_ik) :: n
    n = nbytes
  end function oad_revolve_snapshot_bytes

  ! Appends a value of type `code` to the latest snapshot.
  subroutine put(code, b)
    integer, intent(in) :: code
    integer(int8), intent(in) :: b(:)
    integer(int8), allocatable :: grown(:)
    integer(int64), allocatable :: grown_items(:,:)
    integer(int64) :: need
    if (nframes == 0) call fail('a store without a snapshot begun')
    need = nbytes + size(b, kind=int64)
    if (.not. allocated(bytes)) allocate(bytes(max(1024_int64, need)))
    if (need > size(bytes, kind=int64)) then
      allocate(grown(max(need, 2 * size(bytes, kind=int64))))
      grown(1:nbytes) = bytes(1:nbytes)
      call move_alloc(grown, bytes)
    end if
    bytes(nbytes + 1:need) = b
    nbytes = need
    if (.not. allocated(items)) allocate(items(2, 64))
    if (nitems == size(items, 2, kind=int64)) then
      allocate(grown_items(2, 2 * nitems))
      grown_items(:, 1:nitems) = items(:, 1:nitems)
      call move_alloc(grown_items, items)
    end if
    nitems = nitems + 1
    items(:, nitems) = [int(code, int64), size(b, kind=int64)]
  end subroutine put

  ! The next value of the snapshot being restored, which must be of type
  ! `code` and `n` bytes.
  function take(code, n) result(b)
    integer, intent(in) :: code
    integer(int64), intent(in) :: n
    integer(int8) :: b(n)
    character(len=24) :: want, held
    if (nframes == 0) call fail('a restore without a snapshot')
    if (ritem <= frames(2, nframes)) then
      call fail('a restore of more values than the snapshot holds (' &
           // trim(type_names(code)) // ')')
    end if
    if (items(1, ritem) /= code .or. items(2, ritem) /= n) then
      write (want, '(I0)') n
      write (held, '(I0)') items(2, ritem)
      call fail('a restore of ' // trim(type_names(code)) // ' (' // trim(want) &
           // ' bytes) where the snapshot holds ' &
           // trim(type_names(items(1, ritem))) // ' (' // trim(held) &
           // ' bytes): restores must name the stored variables in reverse order')
    end if
    b = bytes(rbyte - n + 1:rbyte)
    rbyte = rbyte - n
    ritem = ritem - 1
  end function take

";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_snapshot_module_is_what_the_generator_writes() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let have = std::fs::read_to_string(root.join(PATH)).unwrap();
        assert!(
            have == module(),
            "{PATH} is not what `cargo xtask runtime` writes: run it and commit the result"
        );
    }
}
