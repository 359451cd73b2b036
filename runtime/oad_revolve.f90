! Run-time support of xaifb's checkpointed loops (`--checkpoint-loop`):
! the binomial checkpointing schedule of Griewank and Walther (Revolve,
! ACM TOMS Algorithm 799) and the snapshot store, called from the adjoint
! code xaifb generates (docs/checkpointing.md describes every call).
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
! sweep's for a reversed one.
!
! The schedule is the one of xaifb's interpreter (crate xaif-revolve); a
! test compiles this module with gfortran and compares the two action by
! action.
module oad_revolve
  use OAD_rev, only: modeType, our_rev_mode
  use OAD_active, only: active
  implicit none
  private

  integer, parameter :: i8 = selected_int_kind(18)
  integer, parameter, public :: oad_revolve_done = 0
  integer, parameter, public :: oad_revolve_store = 1
  integer, parameter, public :: oad_revolve_restore = 2
  integer, parameter, public :: oad_revolve_advance = 3
  integer, parameter, public :: oad_revolve_tape = 4
  integer, parameter, public :: oad_revolve_adjoint = 5

  ! Phases of a schedule.
  integer, parameter :: p_start = 0, p_ready = 1, p_taped = 2, p_reversed = 3, p_finished = 4

  ! One loop instance: its schedule and the modes of its two sweeps.
  type instance
    integer(i8) :: steps = 0, snaps = 1, capo = 0, fine = 0, forward = 0
    integer :: phase = p_start, line = 0, held = 0, peak = 0
    logical :: adjoint_sweep = .false., taped = .false.
    integer(i8), allocatable :: stored(:)
    type(modeType) :: tape_mode, adjoint_mode
  end type instance

  type(instance), allocatable, save :: running(:), paused(:)
  integer, save :: nrunning = 0, npaused = 0

  ! The snapshots: values of each type in store order, and per snapshot
  ! (frame) where its values of each type begin.
  real(8), allocatable, save :: reals(:)
  integer, allocatable, save :: ints(:)
  logical, allocatable, save :: bools(:)
  character(len=80), allocatable, save :: strings(:)
  integer(i8), save :: ntop(4) = 0
  integer(i8), allocatable, save :: frames(:,:)
  integer, save :: nframes = 0
  ! Where the next restore reads (values left, by type).
  integer(i8), save :: cursor(4) = 0

  public :: oad_revolve_begin, oad_revolve_resume, oad_revolve_next, &
       oad_revolve_forward_steps, oad_revolve_min_forward_steps, &
       oad_revolve_store_real_scalar,&
       oad_revolve_restore_real_scalar,&
       oad_revolve_store_real_vector,&
       oad_revolve_restore_real_vector,&
       oad_revolve_store_real_matrix,&
       oad_revolve_restore_real_matrix,&
       oad_revolve_store_real_three_tensor,&
       oad_revolve_restore_real_three_tensor,&
       oad_revolve_store_real_four_tensor,&
       oad_revolve_restore_real_four_tensor,&
       oad_revolve_store_real_five_tensor,&
       oad_revolve_restore_real_five_tensor,&
       oad_revolve_store_real_six_tensor,&
       oad_revolve_restore_real_six_tensor,&
       oad_revolve_store_real_seven_tensor,&
       oad_revolve_restore_real_seven_tensor,&
       oad_revolve_store_real_scalar_a,&
       oad_revolve_restore_real_scalar_a,&
       oad_revolve_store_real_vector_a,&
       oad_revolve_restore_real_vector_a,&
       oad_revolve_store_real_matrix_a,&
       oad_revolve_restore_real_matrix_a,&
       oad_revolve_store_real_three_tensor_a,&
       oad_revolve_restore_real_three_tensor_a,&
       oad_revolve_store_real_four_tensor_a,&
       oad_revolve_restore_real_four_tensor_a,&
       oad_revolve_store_real_five_tensor_a,&
       oad_revolve_restore_real_five_tensor_a,&
       oad_revolve_store_real_six_tensor_a,&
       oad_revolve_restore_real_six_tensor_a,&
       oad_revolve_store_real_seven_tensor_a,&
       oad_revolve_restore_real_seven_tensor_a,&
       oad_revolve_store_integer_scalar,&
       oad_revolve_restore_integer_scalar,&
       oad_revolve_store_integer_vector,&
       oad_revolve_restore_integer_vector,&
       oad_revolve_store_integer_matrix,&
       oad_revolve_restore_integer_matrix,&
       oad_revolve_store_integer_three_tensor,&
       oad_revolve_restore_integer_three_tensor,&
       oad_revolve_store_integer_four_tensor,&
       oad_revolve_restore_integer_four_tensor,&
       oad_revolve_store_integer_five_tensor,&
       oad_revolve_restore_integer_five_tensor,&
       oad_revolve_store_integer_six_tensor,&
       oad_revolve_restore_integer_six_tensor,&
       oad_revolve_store_integer_seven_tensor,&
       oad_revolve_restore_integer_seven_tensor,&
       oad_revolve_store_bool_scalar,&
       oad_revolve_restore_bool_scalar,&
       oad_revolve_store_bool_vector,&
       oad_revolve_restore_bool_vector,&
       oad_revolve_store_bool_matrix,&
       oad_revolve_restore_bool_matrix,&
       oad_revolve_store_bool_three_tensor,&
       oad_revolve_restore_bool_three_tensor,&
       oad_revolve_store_bool_four_tensor,&
       oad_revolve_restore_bool_four_tensor,&
       oad_revolve_store_bool_five_tensor,&
       oad_revolve_restore_bool_five_tensor,&
       oad_revolve_store_bool_six_tensor,&
       oad_revolve_restore_bool_six_tensor,&
       oad_revolve_store_bool_seven_tensor,&
       oad_revolve_restore_bool_seven_tensor,&
       oad_revolve_store_string_scalar,&
       oad_revolve_restore_string_scalar,&
       oad_revolve_store_string_vector,&
       oad_revolve_restore_string_vector,&
       oad_revolve_store_string_matrix,&
       oad_revolve_restore_string_matrix,&
       oad_revolve_store_string_three_tensor,&
       oad_revolve_restore_string_three_tensor,&
       oad_revolve_store_string_four_tensor,&
       oad_revolve_restore_string_four_tensor,&
       oad_revolve_store_string_five_tensor,&
       oad_revolve_restore_string_five_tensor,&
       oad_revolve_store_string_six_tensor,&
       oad_revolve_restore_string_six_tensor,&
       oad_revolve_store_string_seven_tensor,&
       oad_revolve_restore_string_seven_tensor

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
      action = oad_revolve_done
      count = 0
      return
    case (p_start)
      if (it%steps == 0) then
        it%phase = p_finished
        action = oad_revolve_done
        count = 0
        return
      end if
      it%phase = p_ready
    case (p_taped)
      it%fine = it%fine - 1
      it%phase = p_reversed
      action = oad_revolve_adjoint
      count = it%fine
      return
    case (p_reversed)
      do while (it%held > 0)
        if (it%stored(it%held) < it%fine) exit
        it%held = it%held - 1
      end do
      if (it%fine == 0) then
        it%phase = p_finished
        action = oad_revolve_done
        count = 0
        return
      end if
      it%capo = 0
      if (it%held > 0) it%capo = it%stored(it%held)
      it%phase = p_ready
      action = oad_revolve_restore
      count = it%capo
      return
    end select
    ! Ready: the program holds state capo.
    if (it%capo + 1 == it%fine) then
      it%phase = p_taped
      action = oad_revolve_tape
      count = it%capo
      return
    end if
    if (it%held == 0) then
      call hold(it)
      action = oad_revolve_store
      count = it%capo
      return
    end if
    if (it%stored(it%held) /= it%capo) then
      call hold(it)
      action = oad_revolve_store
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
    action = oad_revolve_advance
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
  subroutine oad_revolve_begin(steps, snapshots, line)
    integer, intent(in) :: steps, snapshots, line
    type(instance) :: it
    if (snapshots < 1) call fail('a checkpointed loop needs at least 1 snapshot')
    it%steps = max(0, steps)
    it%snaps = snapshots
    it%fine = it%steps
    it%line = line
    it%tape_mode = our_rev_mode
    it%adjoint_mode = our_rev_mode
    call push_instance(running, nrunning, it)
  end subroutine oad_revolve_begin

  ! Begins the adjoint sweep of the latest paused loop (the loop at
  ! `line`); the current mode is the adjoint sweep's.
  subroutine oad_revolve_resume(line)
    integer, intent(in) :: line
    if (npaused == 0) call fail('resume without a paused loop')
    if (paused(npaused)%line /= line) call fail('resume of another loop than the one paused last')
    paused(npaused)%adjoint_sweep = .true.
    paused(npaused)%adjoint_mode = our_rev_mode
    call push_instance(running, nrunning, paused(npaused))
    npaused = npaused - 1
  end subroutine oad_revolve_resume

  ! The next action of the running loop into `action` (0 done, 1 store, 2
  ! restore, 3 advance, 4 tape, 5 adjoint) and its count (iterations to
  ! advance; the position stored or restored, or the iteration taped or
  ! reversed, counted from 0).
  subroutine oad_revolve_next(action, count)
    integer, intent(out) :: action, count
    integer(i8) :: c
    integer :: held
    if (nrunning == 0) call fail('next without a running loop')
    associate (it => running(nrunning))
      if (.not. it%adjoint_sweep .and. it%taped) then
        call push_instance(paused, npaused, it)
        nrunning = nrunning - 1
        action = oad_revolve_done
        count = 0
        return
      end if
      held = it%held
      call schedule_next(it, action, c)
      call drop_frames(held - it%held)
      count = int(c)
      select case (action)
      case (oad_revolve_store)
        call open_frame()
      case (oad_revolve_restore)
        call open_reading()
      case (oad_revolve_advance)
        our_rev_mode = plain_mode()
      case (oad_revolve_tape)
        our_rev_mode = it%tape_mode
        if (.not. it%adjoint_sweep) it%taped = .true.
      case (oad_revolve_adjoint)
        our_rev_mode = it%adjoint_mode
      end select
    end associate
    if (action == oad_revolve_done) then
      if (running(nrunning)%adjoint_sweep) then
        our_rev_mode = running(nrunning)%adjoint_mode
        last_forward = running(nrunning)%forward
      else
        call push_instance(paused, npaused, running(nrunning))
      end if
      nrunning = nrunning - 1
    end if
  end subroutine oad_revolve_next

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

  ! ------------------------------------------------------------ snapshots

  subroutine open_frame()
    integer(i8), allocatable :: grown(:,:)
    if (.not. allocated(frames)) allocate(frames(4, 8))
    if (nframes == size(frames, 2)) then
      allocate(grown(4, 2 * size(frames, 2)))
      grown(:, 1:nframes) = frames(:, 1:nframes)
      call move_alloc(grown, frames)
    end if
    nframes = nframes + 1
    frames(:, nframes) = ntop
  end subroutine open_frame

  subroutine drop_frames(n)
    integer, intent(in) :: n
    integer :: k
    do k = 1, n
      if (nframes == 0) call fail('no snapshot to drop')
      ntop = frames(:, nframes)
      nframes = nframes - 1
    end do
  end subroutine drop_frames

  subroutine open_reading()
    if (nframes == 0) call fail('restore without a snapshot')
    cursor = ntop
  end subroutine open_reading

  subroutine put_reals(x)
    real(8), intent(in) :: x(:)
    real(8), allocatable :: grown(:)
    integer(i8) :: need
    need = ntop(1) + size(x)
    if (.not. allocated(reals)) allocate(reals(max(64_i8, need)))
    if (need > size(reals)) then
      allocate(grown(max(need, 2 * size(reals, kind=i8))))
      grown(1:ntop(1)) = reals(1:ntop(1))
      call move_alloc(grown, reals)
    end if
    reals(ntop(1) + 1:need) = x
    ntop(1) = need
  end subroutine put_reals

  function get_reals(n) result(x)
    integer, intent(in) :: n
    real(8) :: x(n)
    if (cursor(1) - n < frames(1, nframes)) call fail('the snapshot holds fewer reals than restored')
    x = reals(cursor(1) - n + 1:cursor(1))
    cursor(1) = cursor(1) - n
  end function get_reals

  function get_reals1() result(x)
    real(8) :: x, y(1)
    y = get_reals(1)
    x = y(1)
  end function get_reals1

  subroutine put_ints(x)
    integer, intent(in) :: x(:)
    integer, allocatable :: grown(:)
    integer(i8) :: need
    need = ntop(2) + size(x)
    if (.not. allocated(ints)) allocate(ints(max(64_i8, need)))
    if (need > size(ints)) then
      allocate(grown(max(need, 2 * size(ints, kind=i8))))
      grown(1:ntop(2)) = ints(1:ntop(2))
      call move_alloc(grown, ints)
    end if
    ints(ntop(2) + 1:need) = x
    ntop(2) = need
  end subroutine put_ints

  function get_ints(n) result(x)
    integer, intent(in) :: n
    integer :: x(n)
    if (cursor(2) - n < frames(2, nframes)) call fail('the snapshot holds fewer integers than restored')
    x = ints(cursor(2) - n + 1:cursor(2))
    cursor(2) = cursor(2) - n
  end function get_ints

  function get_ints1() result(x)
    integer :: x, y(1)
    y = get_ints(1)
    x = y(1)
  end function get_ints1

  subroutine put_bools(x)
    logical, intent(in) :: x(:)
    logical, allocatable :: grown(:)
    integer(i8) :: need
    need = ntop(3) + size(x)
    if (.not. allocated(bools)) allocate(bools(max(64_i8, need)))
    if (need > size(bools)) then
      allocate(grown(max(need, 2 * size(bools, kind=i8))))
      grown(1:ntop(3)) = bools(1:ntop(3))
      call move_alloc(grown, bools)
    end if
    bools(ntop(3) + 1:need) = x
    ntop(3) = need
  end subroutine put_bools

  function get_bools(n) result(x)
    integer, intent(in) :: n
    logical :: x(n)
    if (cursor(3) - n < frames(3, nframes)) call fail('the snapshot holds fewer logicals than restored')
    x = bools(cursor(3) - n + 1:cursor(3))
    cursor(3) = cursor(3) - n
  end function get_bools

  function get_bools1() result(x)
    logical :: x, y(1)
    y = get_bools(1)
    x = y(1)
  end function get_bools1

  subroutine put_strings(x)
    character(len=*), intent(in) :: x(:)
    character(len=80), allocatable :: grown(:)
    integer(i8) :: need
    need = ntop(4) + size(x)
    if (.not. allocated(strings)) allocate(strings(max(64_i8, need)))
    if (need > size(strings)) then
      allocate(grown(max(need, 2 * size(strings, kind=i8))))
      grown(1:ntop(4)) = strings(1:ntop(4))
      call move_alloc(grown, strings)
    end if
    strings(ntop(4) + 1:need) = x
    ntop(4) = need
  end subroutine put_strings

  function get_strings(n) result(x)
    integer, intent(in) :: n
    character(len=80) :: x(n)
    if (cursor(4) - n < frames(4, nframes)) call fail('the snapshot holds fewer strings than restored')
    x = strings(cursor(4) - n + 1:cursor(4))
    cursor(4) = cursor(4) - n
  end function get_strings

  function get_strings1() result(x)
    character(len=80) :: x, y(1)
    y = get_strings(1)
    x = y(1)
  end function get_strings1

  ! -------------------------------------- store and restore, by type and
  ! shape (`_a`: the value part of an active variable), as xaifb names them

  subroutine oad_revolve_store_real_scalar(x)
    real(8), intent(in) :: x
    call put_reals([x])
  end subroutine oad_revolve_store_real_scalar

  subroutine oad_revolve_restore_real_scalar(x)
    real(8), intent(inout) :: x
    x = get_reals1()
  end subroutine oad_revolve_restore_real_scalar

  subroutine oad_revolve_store_real_vector(x)
    real(8), intent(in) :: x(:)
    call put_reals(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_real_vector

  subroutine oad_revolve_restore_real_vector(x)
    real(8), intent(inout) :: x(:)
    x = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_vector

  subroutine oad_revolve_store_real_matrix(x)
    real(8), intent(in) :: x(:,:)
    call put_reals(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_real_matrix

  subroutine oad_revolve_restore_real_matrix(x)
    real(8), intent(inout) :: x(:,:)
    x = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_matrix

  subroutine oad_revolve_store_real_three_tensor(x)
    real(8), intent(in) :: x(:,:,:)
    call put_reals(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_real_three_tensor

  subroutine oad_revolve_restore_real_three_tensor(x)
    real(8), intent(inout) :: x(:,:,:)
    x = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_three_tensor

  subroutine oad_revolve_store_real_four_tensor(x)
    real(8), intent(in) :: x(:,:,:,:)
    call put_reals(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_real_four_tensor

  subroutine oad_revolve_restore_real_four_tensor(x)
    real(8), intent(inout) :: x(:,:,:,:)
    x = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_four_tensor

  subroutine oad_revolve_store_real_five_tensor(x)
    real(8), intent(in) :: x(:,:,:,:,:)
    call put_reals(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_real_five_tensor

  subroutine oad_revolve_restore_real_five_tensor(x)
    real(8), intent(inout) :: x(:,:,:,:,:)
    x = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_five_tensor

  subroutine oad_revolve_store_real_six_tensor(x)
    real(8), intent(in) :: x(:,:,:,:,:,:)
    call put_reals(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_real_six_tensor

  subroutine oad_revolve_restore_real_six_tensor(x)
    real(8), intent(inout) :: x(:,:,:,:,:,:)
    x = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_six_tensor

  subroutine oad_revolve_store_real_seven_tensor(x)
    real(8), intent(in) :: x(:,:,:,:,:,:,:)
    call put_reals(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_real_seven_tensor

  subroutine oad_revolve_restore_real_seven_tensor(x)
    real(8), intent(inout) :: x(:,:,:,:,:,:,:)
    x = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_seven_tensor

  subroutine oad_revolve_store_real_scalar_a(x)
    type(active), intent(in) :: x
    call put_reals([x%v])
  end subroutine oad_revolve_store_real_scalar_a

  subroutine oad_revolve_restore_real_scalar_a(x)
    type(active), intent(inout) :: x
    x%v = get_reals1()
  end subroutine oad_revolve_restore_real_scalar_a

  subroutine oad_revolve_store_real_vector_a(x)
    type(active), intent(in) :: x(:)
    call put_reals(reshape(x%v, [size(x)]))
  end subroutine oad_revolve_store_real_vector_a

  subroutine oad_revolve_restore_real_vector_a(x)
    type(active), intent(inout) :: x(:)
    x%v = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_vector_a

  subroutine oad_revolve_store_real_matrix_a(x)
    type(active), intent(in) :: x(:,:)
    call put_reals(reshape(x%v, [size(x)]))
  end subroutine oad_revolve_store_real_matrix_a

  subroutine oad_revolve_restore_real_matrix_a(x)
    type(active), intent(inout) :: x(:,:)
    x%v = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_matrix_a

  subroutine oad_revolve_store_real_three_tensor_a(x)
    type(active), intent(in) :: x(:,:,:)
    call put_reals(reshape(x%v, [size(x)]))
  end subroutine oad_revolve_store_real_three_tensor_a

  subroutine oad_revolve_restore_real_three_tensor_a(x)
    type(active), intent(inout) :: x(:,:,:)
    x%v = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_three_tensor_a

  subroutine oad_revolve_store_real_four_tensor_a(x)
    type(active), intent(in) :: x(:,:,:,:)
    call put_reals(reshape(x%v, [size(x)]))
  end subroutine oad_revolve_store_real_four_tensor_a

  subroutine oad_revolve_restore_real_four_tensor_a(x)
    type(active), intent(inout) :: x(:,:,:,:)
    x%v = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_four_tensor_a

  subroutine oad_revolve_store_real_five_tensor_a(x)
    type(active), intent(in) :: x(:,:,:,:,:)
    call put_reals(reshape(x%v, [size(x)]))
  end subroutine oad_revolve_store_real_five_tensor_a

  subroutine oad_revolve_restore_real_five_tensor_a(x)
    type(active), intent(inout) :: x(:,:,:,:,:)
    x%v = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_five_tensor_a

  subroutine oad_revolve_store_real_six_tensor_a(x)
    type(active), intent(in) :: x(:,:,:,:,:,:)
    call put_reals(reshape(x%v, [size(x)]))
  end subroutine oad_revolve_store_real_six_tensor_a

  subroutine oad_revolve_restore_real_six_tensor_a(x)
    type(active), intent(inout) :: x(:,:,:,:,:,:)
    x%v = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_six_tensor_a

  subroutine oad_revolve_store_real_seven_tensor_a(x)
    type(active), intent(in) :: x(:,:,:,:,:,:,:)
    call put_reals(reshape(x%v, [size(x)]))
  end subroutine oad_revolve_store_real_seven_tensor_a

  subroutine oad_revolve_restore_real_seven_tensor_a(x)
    type(active), intent(inout) :: x(:,:,:,:,:,:,:)
    x%v = reshape(get_reals(size(x)), shape(x))
  end subroutine oad_revolve_restore_real_seven_tensor_a

  subroutine oad_revolve_store_integer_scalar(x)
    integer, intent(in) :: x
    call put_ints([x])
  end subroutine oad_revolve_store_integer_scalar

  subroutine oad_revolve_restore_integer_scalar(x)
    integer, intent(inout) :: x
    x = get_ints1()
  end subroutine oad_revolve_restore_integer_scalar

  subroutine oad_revolve_store_integer_vector(x)
    integer, intent(in) :: x(:)
    call put_ints(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_integer_vector

  subroutine oad_revolve_restore_integer_vector(x)
    integer, intent(inout) :: x(:)
    x = reshape(get_ints(size(x)), shape(x))
  end subroutine oad_revolve_restore_integer_vector

  subroutine oad_revolve_store_integer_matrix(x)
    integer, intent(in) :: x(:,:)
    call put_ints(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_integer_matrix

  subroutine oad_revolve_restore_integer_matrix(x)
    integer, intent(inout) :: x(:,:)
    x = reshape(get_ints(size(x)), shape(x))
  end subroutine oad_revolve_restore_integer_matrix

  subroutine oad_revolve_store_integer_three_tensor(x)
    integer, intent(in) :: x(:,:,:)
    call put_ints(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_integer_three_tensor

  subroutine oad_revolve_restore_integer_three_tensor(x)
    integer, intent(inout) :: x(:,:,:)
    x = reshape(get_ints(size(x)), shape(x))
  end subroutine oad_revolve_restore_integer_three_tensor

  subroutine oad_revolve_store_integer_four_tensor(x)
    integer, intent(in) :: x(:,:,:,:)
    call put_ints(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_integer_four_tensor

  subroutine oad_revolve_restore_integer_four_tensor(x)
    integer, intent(inout) :: x(:,:,:,:)
    x = reshape(get_ints(size(x)), shape(x))
  end subroutine oad_revolve_restore_integer_four_tensor

  subroutine oad_revolve_store_integer_five_tensor(x)
    integer, intent(in) :: x(:,:,:,:,:)
    call put_ints(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_integer_five_tensor

  subroutine oad_revolve_restore_integer_five_tensor(x)
    integer, intent(inout) :: x(:,:,:,:,:)
    x = reshape(get_ints(size(x)), shape(x))
  end subroutine oad_revolve_restore_integer_five_tensor

  subroutine oad_revolve_store_integer_six_tensor(x)
    integer, intent(in) :: x(:,:,:,:,:,:)
    call put_ints(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_integer_six_tensor

  subroutine oad_revolve_restore_integer_six_tensor(x)
    integer, intent(inout) :: x(:,:,:,:,:,:)
    x = reshape(get_ints(size(x)), shape(x))
  end subroutine oad_revolve_restore_integer_six_tensor

  subroutine oad_revolve_store_integer_seven_tensor(x)
    integer, intent(in) :: x(:,:,:,:,:,:,:)
    call put_ints(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_integer_seven_tensor

  subroutine oad_revolve_restore_integer_seven_tensor(x)
    integer, intent(inout) :: x(:,:,:,:,:,:,:)
    x = reshape(get_ints(size(x)), shape(x))
  end subroutine oad_revolve_restore_integer_seven_tensor

  subroutine oad_revolve_store_bool_scalar(x)
    logical, intent(in) :: x
    call put_bools([x])
  end subroutine oad_revolve_store_bool_scalar

  subroutine oad_revolve_restore_bool_scalar(x)
    logical, intent(inout) :: x
    x = get_bools1()
  end subroutine oad_revolve_restore_bool_scalar

  subroutine oad_revolve_store_bool_vector(x)
    logical, intent(in) :: x(:)
    call put_bools(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_bool_vector

  subroutine oad_revolve_restore_bool_vector(x)
    logical, intent(inout) :: x(:)
    x = reshape(get_bools(size(x)), shape(x))
  end subroutine oad_revolve_restore_bool_vector

  subroutine oad_revolve_store_bool_matrix(x)
    logical, intent(in) :: x(:,:)
    call put_bools(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_bool_matrix

  subroutine oad_revolve_restore_bool_matrix(x)
    logical, intent(inout) :: x(:,:)
    x = reshape(get_bools(size(x)), shape(x))
  end subroutine oad_revolve_restore_bool_matrix

  subroutine oad_revolve_store_bool_three_tensor(x)
    logical, intent(in) :: x(:,:,:)
    call put_bools(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_bool_three_tensor

  subroutine oad_revolve_restore_bool_three_tensor(x)
    logical, intent(inout) :: x(:,:,:)
    x = reshape(get_bools(size(x)), shape(x))
  end subroutine oad_revolve_restore_bool_three_tensor

  subroutine oad_revolve_store_bool_four_tensor(x)
    logical, intent(in) :: x(:,:,:,:)
    call put_bools(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_bool_four_tensor

  subroutine oad_revolve_restore_bool_four_tensor(x)
    logical, intent(inout) :: x(:,:,:,:)
    x = reshape(get_bools(size(x)), shape(x))
  end subroutine oad_revolve_restore_bool_four_tensor

  subroutine oad_revolve_store_bool_five_tensor(x)
    logical, intent(in) :: x(:,:,:,:,:)
    call put_bools(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_bool_five_tensor

  subroutine oad_revolve_restore_bool_five_tensor(x)
    logical, intent(inout) :: x(:,:,:,:,:)
    x = reshape(get_bools(size(x)), shape(x))
  end subroutine oad_revolve_restore_bool_five_tensor

  subroutine oad_revolve_store_bool_six_tensor(x)
    logical, intent(in) :: x(:,:,:,:,:,:)
    call put_bools(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_bool_six_tensor

  subroutine oad_revolve_restore_bool_six_tensor(x)
    logical, intent(inout) :: x(:,:,:,:,:,:)
    x = reshape(get_bools(size(x)), shape(x))
  end subroutine oad_revolve_restore_bool_six_tensor

  subroutine oad_revolve_store_bool_seven_tensor(x)
    logical, intent(in) :: x(:,:,:,:,:,:,:)
    call put_bools(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_bool_seven_tensor

  subroutine oad_revolve_restore_bool_seven_tensor(x)
    logical, intent(inout) :: x(:,:,:,:,:,:,:)
    x = reshape(get_bools(size(x)), shape(x))
  end subroutine oad_revolve_restore_bool_seven_tensor

  subroutine oad_revolve_store_string_scalar(x)
    character(len=*), intent(in) :: x
    call put_strings([x])
  end subroutine oad_revolve_store_string_scalar

  subroutine oad_revolve_restore_string_scalar(x)
    character(len=*), intent(inout) :: x
    x = get_strings1()
  end subroutine oad_revolve_restore_string_scalar

  subroutine oad_revolve_store_string_vector(x)
    character(len=*), intent(in) :: x(:)
    call put_strings(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_string_vector

  subroutine oad_revolve_restore_string_vector(x)
    character(len=*), intent(inout) :: x(:)
    x = reshape(get_strings(size(x)), shape(x))
  end subroutine oad_revolve_restore_string_vector

  subroutine oad_revolve_store_string_matrix(x)
    character(len=*), intent(in) :: x(:,:)
    call put_strings(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_string_matrix

  subroutine oad_revolve_restore_string_matrix(x)
    character(len=*), intent(inout) :: x(:,:)
    x = reshape(get_strings(size(x)), shape(x))
  end subroutine oad_revolve_restore_string_matrix

  subroutine oad_revolve_store_string_three_tensor(x)
    character(len=*), intent(in) :: x(:,:,:)
    call put_strings(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_string_three_tensor

  subroutine oad_revolve_restore_string_three_tensor(x)
    character(len=*), intent(inout) :: x(:,:,:)
    x = reshape(get_strings(size(x)), shape(x))
  end subroutine oad_revolve_restore_string_three_tensor

  subroutine oad_revolve_store_string_four_tensor(x)
    character(len=*), intent(in) :: x(:,:,:,:)
    call put_strings(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_string_four_tensor

  subroutine oad_revolve_restore_string_four_tensor(x)
    character(len=*), intent(inout) :: x(:,:,:,:)
    x = reshape(get_strings(size(x)), shape(x))
  end subroutine oad_revolve_restore_string_four_tensor

  subroutine oad_revolve_store_string_five_tensor(x)
    character(len=*), intent(in) :: x(:,:,:,:,:)
    call put_strings(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_string_five_tensor

  subroutine oad_revolve_restore_string_five_tensor(x)
    character(len=*), intent(inout) :: x(:,:,:,:,:)
    x = reshape(get_strings(size(x)), shape(x))
  end subroutine oad_revolve_restore_string_five_tensor

  subroutine oad_revolve_store_string_six_tensor(x)
    character(len=*), intent(in) :: x(:,:,:,:,:,:)
    call put_strings(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_string_six_tensor

  subroutine oad_revolve_restore_string_six_tensor(x)
    character(len=*), intent(inout) :: x(:,:,:,:,:,:)
    x = reshape(get_strings(size(x)), shape(x))
  end subroutine oad_revolve_restore_string_six_tensor

  subroutine oad_revolve_store_string_seven_tensor(x)
    character(len=*), intent(in) :: x(:,:,:,:,:,:,:)
    call put_strings(reshape(x, [size(x)]))
  end subroutine oad_revolve_store_string_seven_tensor

  subroutine oad_revolve_restore_string_seven_tensor(x)
    character(len=*), intent(inout) :: x(:,:,:,:,:,:,:)
    x = reshape(get_strings(size(x)), shape(x))
  end subroutine oad_revolve_restore_string_seven_tensor

end module oad_revolve
