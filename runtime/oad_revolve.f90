! Run-time support of xaifb's checkpointed loops (`--checkpoint-loop`):
! the binomial checkpointing schedule of Griewank and Walther (Revolve,
! ACM TOMS Algorithm 799), called from the adjoint code xaifb generates
! (docs/checkpointing.md describes every call). The snapshots are kept by
! module oad_revolve_snapshots (runtime/oad_revolve_snapshots.f90), whose
! generic calls oad_revolve_store(x) and oad_revolve_restore(x) this
! module passes on: `use oad_revolve` is all a program needs.
!
! A checkpointed loop is reversed in two sweeps. The taping sweep calls
! oad_revolve_begin, then oad_revolve_next until it answers 0: store a
! snapshot (1), advance COUNT iterations without taping (3), tape one
! iteration (4), after which the sweep pauses. The adjoint sweep calls
! oad_revolve_resume, then oad_revolve_next until it answers 0: besides
! the above, restore the latest snapshot (2) and reverse the iteration
! just taped (5). Paused and running loops form stacks, so loops nest
! (two-level checkpointing) and routines recurse. oad_revolve_next sets
! our_rev_mode for the callees of the iteration it asks for: plain for an
! advance, the taping sweep's mode for a taped iteration, the adjoint
! sweep's for a reversed one. oad_revolve_abandon drops every loop in
! progress and every snapshot (after an error exit from a loop).
!
! The counters (steps, snapshots, line, action, count) are integers of
! kind oad_revolve_ik (64 bits) or default integers (32 bits, what xaifb
! generates): each call is generic over both.
!
! The schedule is the one of xaifb's interpreter (crate xaif-revolve); a
! test compiles this module with gfortran and compares the two action by
! action.
module oad_revolve
  use iso_fortran_env, only: int32
  use OAD_rev, only: modeType, our_rev_mode
  use oad_revolve_snapshots
  implicit none
  private

  integer, parameter :: i8 = oad_revolve_ik
  integer, parameter, public :: oad_revolve_action_done = 0
  integer, parameter, public :: oad_revolve_action_store = 1
  integer, parameter, public :: oad_revolve_action_restore = 2
  integer, parameter, public :: oad_revolve_action_advance = 3
  integer, parameter, public :: oad_revolve_action_tape = 4
  integer, parameter, public :: oad_revolve_action_adjoint = 5

  ! Phases of a schedule.
  integer, parameter :: p_start = 0, p_ready = 1, p_taped = 2, p_reversed = 3, p_finished = 4

  ! One loop instance: its schedule and the modes of its two sweeps.
  type instance
    integer(i8) :: steps = 0, snaps = 1, capo = 0, fine = 0, forward = 0, line = 0
    integer :: phase = p_start, held = 0, peak = 0
    logical :: adjoint_sweep = .false., taped = .false.
    integer(i8), allocatable :: stored(:)
    type(modeType) :: tape_mode, adjoint_mode
  end type instance

  type(instance), allocatable, save :: running(:), paused(:)
  integer, save :: nrunning = 0, npaused = 0

  public :: oad_revolve_ik, oad_revolve_begin, oad_revolve_resume, oad_revolve_next, &
       oad_revolve_abandon, oad_revolve_forward_steps, oad_revolve_min_forward_steps, &
       oad_revolve_store, oad_revolve_restore, oad_revolve_snapshots_held, &
       oad_revolve_snapshot_bytes

  interface oad_revolve_begin
    module procedure begin64, begin32
  end interface oad_revolve_begin

  interface oad_revolve_resume
    module procedure resume64, resume32
  end interface oad_revolve_resume

  interface oad_revolve_next
    module procedure next64, next32
  end interface oad_revolve_next

  integer(i8), save :: last_forward = 0

contains

  ! ------------------------------------------------------------- schedule

  ! C(s + r, s), saturating at huge(1_i8).
  function binomial(s, r) result(b)
    integer(i8), intent(in) :: s, r
    integer(i8) :: b, k, n
    b = 1
    n = s + r
    do k = 1, min(s, r)
      if (b > huge(b) / (n - k + 1)) then
        b = huge(b)
        return
      end if
      b = b * (n - k + 1) / k
    end do
  end function binomial

  ! The least r with C(s + r, s) >= steps (bisection).
  function repetitions(steps, s) result(r)
    integer(i8), intent(in) :: steps, s
    integer(i8) :: r, lo, hi, mid
    if (steps <= 1) then
      r = 0
      return
    end if
    lo = 0
    hi = steps - 1
    do while (lo < hi)
      mid = lo + (hi - lo) / 2
      if (binomial(max(s, 1_i8), mid) >= steps) then
        hi = mid
      else
        lo = mid + 1
      end if
    end do
    r = lo
  end function repetitions

  ! t(l, s) = r l - C(s + r, s + 1): the fewest untaped steps.
  function oad_revolve_min_forward_steps(steps, s) result(t)
    integer(i8), intent(in) :: steps, s
    integer(i8) :: t, r
    if (steps <= 1) then
      t = 0
      return
    end if
    r = repetitions(steps, max(s, 1_i8))
    t = r * steps - binomial(max(s, 1_i8) + 1, r - 1)
  end function oad_revolve_min_forward_steps

  ! Steps to advance from a snapshot with l >= 2 steps to reverse and
  ! a >= 2 snapshots for them: the largest m with m <= C(a + r - 1, a)
  ! and l - m >= C(a + r - 2, a - 1).
  function next_snapshot(l, a) result(m)
    integer(i8), intent(in) :: l, a
    integer(i8) :: m, r
    r = repetitions(l, a)
    m = min(binomial(a, r - 1), l - binomial(a - 1, r - 1))
    m = max(1_i8, min(m, l - 1))
  end function next_snapshot

  ! The next action of schedule `it` and its count (see oad_revolve_next).
  subroutine schedule_next(it, action, count)
    type(instance), intent(inout) :: it
    integer, intent(out) :: action
    integer(i8), intent(out) :: count
    integer(i8) :: avail, target
    select case (it%phase)
    case (p_finished)
      action = oad_revolve_action_done
      count = 0
      return
    case (p_start)
      if (it%steps == 0) then
        it%phase = p_finished
        action = oad_revolve_action_done
        count = 0
        return
      end if
      it%phase = p_ready
    case (p_taped)
      it%fine = it%fine - 1
      it%phase = p_reversed
      action = oad_revolve_action_adjoint
      count = it%fine
      return
    case (p_reversed)
      do while (it%held > 0)
        if (it%stored(it%held) < it%fine) exit
        it%held = it%held - 1
      end do
      if (it%fine == 0) then
        it%phase = p_finished
        action = oad_revolve_action_done
        count = 0
        return
      end if
      it%capo = 0
      if (it%held > 0) it%capo = it%stored(it%held)
      it%phase = p_ready
      action = oad_revolve_action_restore
      count = it%capo
      return
    end select
    ! Ready: the program holds state capo.
    if (it%capo + 1 == it%fine) then
      it%phase = p_taped
      action = oad_revolve_action_tape
      count = it%capo
      return
    end if
    if (it%held == 0) then
      call hold(it)
      action = oad_revolve_action_store
      count = it%capo
      return
    end if
    if (it%stored(it%held) /= it%capo) then
      call hold(it)
      action = oad_revolve_action_store
      count = it%capo
      return
    end if
    avail = it%snaps - (it%held - 1)
    if (avail <= 1) then
      target = it%fine - 1
    else
      target = it%capo + next_snapshot(it%fine - it%capo, avail)
    end if
    count = target - it%capo
    it%forward = it%forward + count
    it%capo = target
    action = oad_revolve_action_advance
  end subroutine schedule_next

  ! Records a snapshot at capo.
  subroutine hold(it)
    type(instance), intent(inout) :: it
    integer(i8), allocatable :: grown(:)
    if (.not. allocated(it%stored)) allocate(it%stored(8))
    if (it%held == size(it%stored)) then
      allocate(grown(2 * size(it%stored)))
      grown(1:it%held) = it%stored(1:it%held)
      call move_alloc(grown, it%stored)
    end if
    it%held = it%held + 1
    it%stored(it%held) = it%capo
    it%peak = max(it%peak, it%held)
  end subroutine hold

  ! ------------------------------------------------------------ instances

  subroutine push_instance(stack, n, it)
    type(instance), allocatable, intent(inout) :: stack(:)
    integer, intent(inout) :: n
    type(instance), intent(in) :: it
    type(instance), allocatable :: grown(:)
    integer :: k
    if (.not. allocated(stack)) allocate(stack(8))
    if (n == size(stack)) then
      allocate(grown(2 * size(stack)))
      do k = 1, n
        grown(k) = stack(k)
      end do
      call move_alloc(grown, stack)
    end if
    n = n + 1
    stack(n) = it
  end subroutine push_instance

  subroutine fail(message)
    character(len=*), intent(in) :: message
    write (*, '(A,A)') 'oad_revolve: ', message
    stop 1
  end subroutine fail

  ! Begins the taping sweep of a loop of `steps` iterations (none when
  ! negative) holding at most `snapshots` loop states; the current mode
  ! is the taping sweep's.
  subroutine begin64(steps, snapshots, line)
    integer(i8), intent(in) :: steps, snapshots, line
    type(instance) :: it
    if (snapshots < 1) call fail('a checkpointed loop needs at least 1 snapshot')
    it%steps = max(0_i8, steps)
    it%snaps = snapshots
    it%fine = it%steps
    it%line = line
    it%tape_mode = our_rev_mode
    it%adjoint_mode = our_rev_mode
    call push_instance(running, nrunning, it)
  end subroutine begin64

  subroutine begin32(steps, snapshots, line)
    integer(int32), intent(in) :: steps, snapshots, line
    call begin64(int(steps, i8), int(snapshots, i8), int(line, i8))
  end subroutine begin32

  ! Begins the adjoint sweep of the latest paused loop (the loop at
  ! `line`); the current mode is the adjoint sweep's.
  subroutine resume64(line)
    integer(i8), intent(in) :: line
    if (npaused == 0) call fail('resume without a paused loop')
    if (paused(npaused)%line /= line) call fail('resume of another loop than the one paused last')
    paused(npaused)%adjoint_sweep = .true.
    paused(npaused)%adjoint_mode = our_rev_mode
    call push_instance(running, nrunning, paused(npaused))
    npaused = npaused - 1
  end subroutine resume64

  subroutine resume32(line)
    integer(int32), intent(in) :: line
    call resume64(int(line, i8))
  end subroutine resume32

  ! The next action of the running loop into `action` (0 done, 1 store, 2
  ! restore, 3 advance, 4 tape, 5 adjoint) and its count (iterations to
  ! advance; the position stored or restored, or the iteration taped or
  ! reversed, counted from 0).
  subroutine next64(action, count)
    integer(i8), intent(out) :: action, count
    integer :: a, held
    if (nrunning == 0) call fail('next without a running loop')
    associate (it => running(nrunning))
      if (.not. it%adjoint_sweep .and. it%taped) then
        call push_instance(paused, npaused, it)
        nrunning = nrunning - 1
        action = oad_revolve_action_done
        count = 0
        return
      end if
      held = it%held
      call schedule_next(it, a, count)
      action = a
      call oad_revolve_frames_drop(held - it%held)
      select case (a)
      case (oad_revolve_action_store)
        call oad_revolve_frame_open()
      case (oad_revolve_action_restore)
        call oad_revolve_frame_read()
      case (oad_revolve_action_advance)
        our_rev_mode = plain_mode()
      case (oad_revolve_action_tape)
        our_rev_mode = it%tape_mode
        if (.not. it%adjoint_sweep) it%taped = .true.
      case (oad_revolve_action_adjoint)
        our_rev_mode = it%adjoint_mode
      end select
    end associate
    if (action == oad_revolve_action_done) then
      if (running(nrunning)%adjoint_sweep) then
        our_rev_mode = running(nrunning)%adjoint_mode
        last_forward = running(nrunning)%forward
      else
        call push_instance(paused, npaused, running(nrunning))
      end if
      nrunning = nrunning - 1
    end if
  end subroutine next64

  subroutine next32(action, count)
    integer(int32), intent(out) :: action, count
    integer(i8) :: a, c
    call next64(a, c)
    if (c > huge(count)) call fail('a count beyond a 32-bit integer: use integer(oad_revolve_ik)')
    action = int(a, int32)
    count = int(c, int32)
  end subroutine next32

  ! Abandons every loop in progress, running or paused, and drops every
  ! snapshot: after an error exit from a checkpointed loop, the run-time
  ! is as before the first oad_revolve_begin (our_rev_mode is left as it
  ! is).
  subroutine oad_revolve_abandon()
    nrunning = 0
    npaused = 0
    if (allocated(running)) deallocate(running)
    if (allocated(paused)) deallocate(paused)
    call oad_revolve_frames_clear()
  end subroutine oad_revolve_abandon

  ! Untaped iterations of the loop finished last.
  function oad_revolve_forward_steps() result(t)
    integer(i8) :: t
    t = last_forward
  end function oad_revolve_forward_steps

  function plain_mode() result(m)
    type(modeType) :: m
    m%arg_store = .false.
    m%arg_restore = .false.
    m%res_store = .false.
    m%res_restore = .false.
    m%plain = .true.
    m%tape = .false.
    m%adjoint = .false.
  end function plain_mode

end module oad_revolve
