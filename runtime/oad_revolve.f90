! Run-time support of xaifb's marked loops (`--checkpoint-loop`,
! `--fixed-point-loop`, `--independent-loop`): the schedules of crate
! xaif-revolve, called from the adjoint code xaifb generates
! (docs/checkpointing.md describes every call). The snapshots are kept by
! module oad_revolve_snapshots (runtime/oad_revolve_snapshots.f90), whose
! generic calls oad_revolve_store(x) and oad_revolve_restore(x) this
! module passes on: `use oad_revolve` is all a program needs.
!
! A marked loop is reversed in two sweeps.
!
! - A counted loop checkpointed by Griewank and Walther's binomial
!   schedule (Revolve, ACM TOMS Algorithm 799): the taping sweep calls
!   oad_revolve_begin, then oad_revolve_next until it answers 0: store a
!   snapshot (1), advance COUNT iterations without taping (3), tape one
!   iteration (4), after which the sweep pauses.
! - A loop that runs itself (a while loop or a loop left by an exit,
!   checkpointed online; a fixed-point loop; a loop of independent
!   iterations): the taping sweep calls its kind's begin
!   (oad_revolve_begin_online, oad_revolve_begin_fixed_point,
!   oad_revolve_begin_independent), asks oad_revolve_iteration before each
!   iteration whether to store the state first (1) or not (0), runs the
!   iteration plain, and calls oad_revolve_end where the loop ends (0
!   through its header, 1 by an exit); the sweep pauses there.
!
! The adjoint sweep calls oad_revolve_resume, then oad_revolve_next until
! it answers 0: besides the above, restore the latest snapshot (2),
! reverse the iteration just taped (5), and for a fixed-point loop
! measure the adjoint of its state (6: oad_revolve_measure of each state
! variable) and, before and after its first taped iteration, report the
! state's values (7: oad_revolve_check of each state variable): a loop
! whose last complete iteration changed its state by more than its
! tolerance, relative to the state's largest value, did not reach the
! fixed point whose derivative the two-phase adjoint gives, and is
! reported with a warning. Paused and running loops form stacks, so loops nest
! (two-level checkpointing, a fixed-point loop inside a time loop) and
! routines recurse. The calls set our_rev_mode for the callees of the
! iteration they ask for: plain for an advance or an iteration the loop
! runs itself, the taping sweep's mode for a taped iteration, the adjoint
! sweep's for a reversed one. oad_revolve_abandon drops every loop in
! progress and every snapshot (after an error exit from a loop).
!
! The counters (steps, snapshots, line, action, count) are integers of
! kind oad_revolve_ik (64 bits) or default integers (32 bits, what xaifb
! generates): each call is generic over both.
!
! The schedules are those of xaifb's interpreter (crate xaif-revolve); a
! test compiles this module with gfortran and compares the two action by
! action, for every kind.
module oad_revolve
  use iso_fortran_env, only: int32, real32, real64, error_unit
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_positive_inf, ieee_quiet_nan, &
       ieee_is_nan, ieee_is_finite
  use OAD_rev, only: modeType, our_rev_mode
  use OAD_active, only: active
  use oad_revolve_snapshots
  implicit none
  private

  integer, parameter :: i8 = oad_revolve_ik
  integer, parameter :: dp = real64
  integer, parameter, public :: oad_revolve_action_done = 0
  integer, parameter, public :: oad_revolve_action_store = 1
  integer, parameter, public :: oad_revolve_action_restore = 2
  integer, parameter, public :: oad_revolve_action_advance = 3
  integer, parameter, public :: oad_revolve_action_tape = 4
  integer, parameter, public :: oad_revolve_action_adjoint = 5
  integer, parameter, public :: oad_revolve_action_measure = 6
  integer, parameter, public :: oad_revolve_action_check = 7

  ! Kinds of schedules.
  integer, parameter :: k_binomial = 0, k_online = 1, k_fixed_point = 2, k_independent = 3

  ! Phases of a binomial schedule.
  integer, parameter :: p_start = 0, p_ready = 1, p_taped = 2, p_reversed = 3, &
       p_finished = 4, p_restore = 5

  ! Phases of an online schedule's adjoint.
  integer, parameter :: o_forward = 0, o_reversing = 1, o_finished = 2

  ! Phases of a fixed-point schedule.
  integer, parameter :: f_forward = 0, f_partial_restore = 1, f_partial_tape = 2, &
       f_partial_adjoint = 3, f_seed = 4, f_restore = 5, f_tape = 6, f_adjoint = 7, &
       f_measure = 8, f_judge = 9, f_finished = 10, f_check_before = 11, &
       f_check_after = 12

  ! A binomial schedule of `steps` steps after position `offset`.
  type binom
    integer(i8) :: steps = 0, snaps = 1, offset = 0, capo = 0, fine = 0, forward = 0
    integer :: phase = p_start, held = 0
    integer(i8), allocatable :: stored(:)
  end type binom

  ! One loop instance: its schedule and the modes of its two sweeps.
  type instance
    integer :: kind = k_binomial
    integer(i8) :: line = 0, snaps = 1, started = 0, forward = 0
    logical :: adjoint_sweep = .false., taped = .false., by_exit = .false.
    type(binom) :: b
    ! Online: the snapshots' positions and whether each is essential, the
    ! parts of the recursive rule (origin, snapshots, phase, next), the
    ! repetition number kept, and the stretch reversed.
    integer(i8), allocatable :: pos(:)
    logical, allocatable :: essential(:)
    integer :: nheld = 0
    integer(i8), allocatable :: parts(:,:)
    integer :: nparts = 0
    integer(i8) :: bound = 0
    integer :: ophase = o_forward, segment = 0
    ! Fixed point.
    real(dp) :: tolerance = 0, largest = 0, pending = 0, last_change = 0
    integer(i8) :: max_iterations = 1, iterations = 0
    integer(i8) :: fheld(2) = 0
    integer :: nfheld = 0, fphase = f_forward
    logical :: converged = .false., adjoint_converged = .false.
    ! The state's values before the first taped iteration, and while
    ! checking those after it: the next one's index, the largest change
    ! and value; the relative change (negative before it is known).
    real(dp), allocatable :: fbefore(:)
    integer(i8) :: nbefore = 0, fnext = 0
    logical :: fafter = .false.
    real(dp) :: fchange = 0, flargest = 0, forward_change = -1
    ! Independent.
    integer(i8) :: next = 0
    integer :: step = 0
    logical :: begun = .false., iheld = .false.
    type(modeType) :: tape_mode, adjoint_mode
  end type instance

  type(instance), allocatable, save :: running(:), paused(:)
  integer, save :: nrunning = 0, npaused = 0

  public :: oad_revolve_ik, oad_revolve_begin, oad_revolve_resume, oad_revolve_next, &
       oad_revolve_begin_online, oad_revolve_begin_fixed_point, &
       oad_revolve_begin_independent, oad_revolve_iteration, oad_revolve_end, &
       oad_revolve_measure, oad_revolve_abandon, oad_revolve_forward_steps, &
       oad_revolve_min_forward_steps, oad_revolve_adjoint_iterations, &
       oad_revolve_adjoint_change, oad_revolve_forward_change, oad_revolve_check, &
       oad_revolve_store, oad_revolve_restore, &
       oad_revolve_snapshots_held, oad_revolve_snapshot_bytes

  interface oad_revolve_begin
    module procedure begin64, begin32
  end interface oad_revolve_begin

  interface oad_revolve_begin_online
    module procedure begin_online64, begin_online32
  end interface oad_revolve_begin_online

  interface oad_revolve_begin_fixed_point
    module procedure begin_fixed_point64, begin_fixed_point32, &
         begin_fixed_point64s, begin_fixed_point32s
  end interface oad_revolve_begin_fixed_point

  interface oad_revolve_begin_independent
    module procedure begin_independent64, begin_independent32
  end interface oad_revolve_begin_independent

  interface oad_revolve_resume
    module procedure resume64, resume32
  end interface oad_revolve_resume

  interface oad_revolve_next
    module procedure next64, next32
  end interface oad_revolve_next

  interface oad_revolve_iteration
    module procedure iteration64, iteration32
  end interface oad_revolve_iteration

  interface oad_revolve_end
    module procedure end64, end32
  end interface oad_revolve_end

  interface oad_revolve_measure
    module procedure measure_a0, measure_a1, measure_a2, measure_a3, measure_a4, &
         measure_a5, measure_a6, measure_a7, measure_r0, measure_r1
  end interface oad_revolve_measure

  interface oad_revolve_check
    module procedure check_a0, check_a1, check_a2, check_a3, check_a4, &
         check_a5, check_a6, check_a7, check_r0, check_r1
  end interface oad_revolve_check

  integer(i8), save :: last_forward = 0, last_iterations = 0
  real(dp), save :: last_change = 0, last_forward_change = 0

contains

  ! ------------------------------------------------------------- binomial

  ! C(s + r, s), saturating at huge(1_i8).
  function binomial(s, r) result(b)
    integer(i8), intent(in) :: s, r
    integer(i8) :: b, k, n
    b = 1
    if (s > huge(s) - r) then
      b = huge(b)
      return
    end if
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

  ! A binomial schedule of `steps` steps with `snaps` snapshots.
  subroutine binom_new(b, steps, snaps)
    type(binom), intent(out) :: b
    integer(i8), intent(in) :: steps, snaps
    b%steps = steps
    b%snaps = max(1_i8, snaps)
    b%fine = steps
    b%phase = p_start
  end subroutine binom_new

  ! The schedule of the `steps` steps after position `offset`, whose
  ! state is held in the newest snapshot already but is not the
  ! program's: the first action restores it, and the last drops it.
  subroutine binom_from_snapshot(b, offset, steps, snaps)
    type(binom), intent(out) :: b
    integer(i8), intent(in) :: offset, steps, snaps
    call binom_new(b, steps, snaps)
    b%offset = offset
    call binom_hold(b, 0_i8)
    if (steps == 0) then
      b%phase = p_reversed
    else
      b%phase = p_restore
    end if
  end subroutine binom_from_snapshot

  ! The next action of schedule `b` and its count (see oad_revolve_next);
  ! snapshots no longer needed are dropped (the newest ones).
  subroutine binom_next(b, action, count)
    type(binom), intent(inout) :: b
    integer, intent(out) :: action
    integer(i8), intent(out) :: count
    integer(i8) :: avail, target
    select case (b%phase)
    case (p_finished)
      action = oad_revolve_action_done
      count = 0
      return
    case (p_start)
      if (b%steps == 0) then
        b%phase = p_finished
        action = oad_revolve_action_done
        count = 0
        return
      end if
      b%phase = p_ready
    case (p_restore)
      b%phase = p_ready
      action = oad_revolve_action_restore
      count = b%offset
      return
    case (p_taped)
      b%fine = b%fine - 1
      b%phase = p_reversed
      action = oad_revolve_action_adjoint
      count = b%offset + b%fine
      return
    case (p_reversed)
      do while (b%held > 0)
        if (b%stored(b%held) < b%fine) exit
        b%held = b%held - 1
        call oad_revolve_frames_drop(1)
      end do
      if (b%fine == 0) then
        b%phase = p_finished
        action = oad_revolve_action_done
        count = 0
        return
      end if
      b%capo = 0
      if (b%held > 0) b%capo = b%stored(b%held)
      b%phase = p_ready
      action = oad_revolve_action_restore
      count = b%offset + b%capo
      return
    end select
    ! Ready: the program holds state capo.
    if (b%capo + 1 == b%fine) then
      b%phase = p_taped
      action = oad_revolve_action_tape
      count = b%offset + b%capo
      return
    end if
    if (b%held == 0) then
      call binom_hold(b, b%capo)
      action = oad_revolve_action_store
      count = b%offset + b%capo
      return
    end if
    if (b%stored(b%held) /= b%capo) then
      call binom_hold(b, b%capo)
      action = oad_revolve_action_store
      count = b%offset + b%capo
      return
    end if
    avail = b%snaps - (b%held - 1)
    if (avail <= 1) then
      target = b%fine - 1
    else
      target = b%capo + next_snapshot(b%fine - b%capo, avail)
    end if
    count = target - b%capo
    b%forward = b%forward + count
    b%capo = target
    action = oad_revolve_action_advance
  end subroutine binom_next

  ! Records a snapshot at `at`.
  subroutine binom_hold(b, at)
    type(binom), intent(inout) :: b
    integer(i8), intent(in) :: at
    call grow(b%stored, b%held)
    b%held = b%held + 1
    b%stored(b%held) = at
  end subroutine binom_hold

  ! Room for one more element after the first `n` of `a`.
  subroutine grow(a, n)
    integer(i8), allocatable, intent(inout) :: a(:)
    integer, intent(in) :: n
    integer(i8), allocatable :: grown(:)
    if (.not. allocated(a)) allocate(a(8))
    if (n == size(a)) then
      allocate(grown(2 * size(a)))
      grown(1:n) = a(1:n)
      call move_alloc(grown, a)
    end if
  end subroutine grow

  ! --------------------------------------------------------------- online
  !
  ! Online checkpointing (crate xaif-revolve, src/online.rs, explains the
  ! rule): when the loop ends after l iterations, every iteration has run
  ! untaped at most r(l + 1, s) times, the least r with C(s + r, s) > l.

  ! Whether stretch i (1-based: from snapshot i) is short enough for the
  ! bound with l iterations.
  logical function online_valid(it, i, l)
    type(instance), intent(in) :: it
    integer, intent(in) :: i
    integer(i8), intent(in) :: l
    integer(i8) :: e, len
    if (i < it%nheld) then
      e = it%pos(i + 1)
    else
      e = l
    end if
    len = e - it%pos(i)
    online_valid = len <= 1
    if (.not. online_valid) online_valid = len <= binomial(it%snaps - (i - 1), it%bound - 1)
  end function online_valid

  ! Drops the newest dispensable snapshot; its index (1-based), or 0
  ! when there is none.
  integer function online_drop_dispensable(it) result(d)
    type(instance), intent(inout) :: it
    integer :: k
    d = 0
    do k = it%nheld, 1, -1
      if (.not. it%essential(k)) then
        d = k
        exit
      end if
    end do
    if (d == 0) return
    call oad_revolve_frame_drop_at(it%nheld - d)
    it%pos(d:it%nheld - 1) = it%pos(d + 1:it%nheld)
    it%essential(d:it%nheld - 1) = it%essential(d + 1:it%nheld)
    it%nheld = it%nheld - 1
  end function online_drop_dispensable

  ! Drops dispensable snapshots until every stretch is valid with l
  ! iterations; `suspects` (n of them) start the stretches that may not be.
  subroutine online_repair(it, l, suspects, n)
    type(instance), intent(inout) :: it
    integer(i8), intent(in) :: l
    integer(i8), allocatable, intent(inout) :: suspects(:)
    integer, intent(inout) :: n
    integer(i8) :: at
    integer :: i, d
    do while (n > 0)
      at = suspects(n)
      n = n - 1
      i = online_find(it, at)
      if (i == 0) cycle
      if (online_valid(it, i, l)) cycle
      d = online_drop_dispensable(it)
      if (d == 0) return
      call grow(suspects, n)
      n = n + 1
      suspects(n) = at
      call grow(suspects, n)
      n = n + 1
      suspects(n) = it%pos(d - 1)
    end do
  end subroutine online_repair

  ! The index of the snapshot at `at` (bisection), or 0.
  integer function online_find(it, at) result(i)
    type(instance), intent(in) :: it
    integer(i8), intent(in) :: at
    integer :: lo, hi, mid
    lo = 1
    hi = it%nheld
    i = 0
    do while (lo <= hi)
      mid = lo + (hi - lo) / 2
      if (it%pos(mid) == at) then
        i = mid
        return
      else if (it%pos(mid) < at) then
        lo = mid + 1
      else
        hi = mid - 1
      end if
    end do
  end function online_find

  ! The rule's phase beginning at iteration k, if any: the state there
  ! is stored.
  logical function online_phase_begins(it, k) result(begins)
    type(instance), intent(inout) :: it
    integer(i8), intent(in) :: k
    integer :: d, j
    integer(i8) :: origin, snaps, phase
    integer(i8), allocatable :: grown(:,:)
    begins = .false.
    d = 0
    do j = 1, it%nparts
      if (it%parts(2, j) >= 2 .and. it%parts(4, j) == k) then
        d = j
        exit
      end if
    end do
    if (d == 0) return
    origin = it%parts(1, d)
    snaps = it%parts(2, d)
    phase = it%parts(3, d) + 1
    do j = 1, it%nheld
      if (origin < it%pos(j) .and. it%pos(j) < k) it%essential(j) = .false.
    end do
    it%parts(3, d) = phase
    it%parts(4, d) = origin + min(binomial(snaps, phase - 1), huge(origin) - origin)
    it%nparts = d
    if (it%nparts == size(it%parts, 2)) then
      allocate(grown(4, 2 * size(it%parts, 2)))
      grown(:, 1:it%nparts) = it%parts(:, 1:it%nparts)
      call move_alloc(grown, it%parts)
    end if
    it%nparts = it%nparts + 1
    it%parts(:, it%nparts) = [k, snaps - 1, 1_i8, k + 1]
    begins = .true.
  end function online_phase_begins

  ! One more iteration is about to run: whether to store the state first.
  logical function online_iteration(it) result(store)
    type(instance), intent(inout) :: it
    integer(i8) :: k, l
    integer(i8), allocatable :: suspects(:)
    integer :: n, d
    logical, allocatable :: grown(:)
    k = it%started
    it%started = it%started + 1
    it%forward = it%forward + 1
    l = k + 1
    do while (binomial(it%snaps, it%bound) <= l)
      it%bound = it%bound + 1
    end do
    allocate(suspects(8))
    n = 0
    if (k == 0) then
      if (.not. allocated(it%parts)) allocate(it%parts(4, 8))
      it%nparts = 1
      it%parts(:, 1) = [0_i8, it%snaps, 1_i8, 1_i8]
      store = .true.
    else
      store = online_phase_begins(it, k)
    end if
    if (store) then
      if (it%nheld == it%snaps) then
        d = online_drop_dispensable(it)
        if (d > 0) then
          n = n + 1
          suspects(n) = it%pos(d - 1)
        end if
      end if
      if (allocated(it%essential)) then
        if (it%nheld == size(it%essential)) then
          allocate(grown(2 * it%nheld))
          grown(1:it%nheld) = it%essential(1:it%nheld)
          call move_alloc(grown, it%essential)
        end if
      else
        allocate(it%essential(8))
      end if
      call grow(it%pos, it%nheld)
      it%nheld = it%nheld + 1
      it%pos(it%nheld) = k
      it%essential(it%nheld) = .true.
    end if
    if (it%nheld > 0) then
      call grow(suspects, n)
      n = n + 1
      suspects(n) = it%pos(it%nheld)
    end if
    call online_repair(it, l, suspects, n)
  end function online_iteration

  ! The next action of an online schedule's adjoint sweep.
  subroutine online_next(it, action, count)
    type(instance), intent(inout) :: it
    integer, intent(out) :: action
    integer(i8), intent(out) :: count
    integer(i8) :: start
    do
      select case (it%ophase)
      case (o_finished)
        action = oad_revolve_action_done
        count = 0
        return
      case (o_forward)
        if (it%nheld == 0) then
          it%ophase = o_finished
          action = oad_revolve_action_done
          count = 0
          return
        end if
        it%segment = it%nheld
        call online_stretch(it, it%started)
        it%ophase = o_reversing
      case (o_reversing)
        call binom_next(it%b, action, count)
        if (action /= oad_revolve_action_done) return
        ! The stretch's own snapshot went with its last step.
        it%forward = it%forward + it%b%forward
        start = it%pos(it%segment)
        it%nheld = it%nheld - 1
        if (it%segment == 1) then
          it%ophase = o_finished
          action = oad_revolve_action_done
          count = 0
          return
        end if
        it%segment = it%segment - 1
        call online_stretch(it, start)
      end select
    end do
  end subroutine online_next

  ! The stretch from snapshot `segment` to `e`, reversed from its snapshot
  ! with the snapshots left to it.
  subroutine online_stretch(it, e)
    type(instance), intent(inout) :: it
    integer(i8), intent(in) :: e
    integer(i8) :: at
    at = it%pos(it%segment)
    call binom_from_snapshot(it%b, at, e - at, it%snaps - (it%segment - 1))
  end subroutine online_stretch

  ! ---------------------------------------------------------- fixed point
  !
  ! Christianson's two-phase adjoint (crate xaif-revolve,
  ! src/fixed_point.rs): the taping sweep keeps the states before the last
  ! two iterations; the adjoint sweep reverses the partial iteration an
  ! exit left, then restores the state before the last complete iteration,
  ! tapes and reverses it again and again until the largest absolute
  ! adjoint of the loop's state changes by at most TOLERANCE times the
  ! largest seen, or MAXITER adjoint iterations (then a warning on the
  ! standard error).

  ! The last complete iteration, or -1 when there is none.
  integer(i8) function fp_complete(it) result(c)
    type(instance), intent(in) :: it
    if (it%started == 0 .or. (it%by_exit .and. it%started == 1)) then
      c = -1
    else if (it%by_exit) then
      c = it%started - 2
    else
      c = it%started - 1
    end if
  end function fp_complete

  ! Drops the older of two states held.
  subroutine fp_drop_older(it)
    type(instance), intent(inout) :: it
    it%fheld(1) = it%fheld(2)
    it%nfheld = 1
    call oad_revolve_frame_drop_at(1)
  end subroutine fp_drop_older

  ! Whether the adjoint iteration is over (converged or at its limit).
  logical function fp_judge(it) result(over)
    type(instance), intent(inout) :: it
    real(dp) :: d, reference
    d = it%pending
    reference = it%largest
    if (d > it%largest) it%largest = d
    if (reference > 0) then
      it%last_change = d / reference
    else if (.not. (d > 0 .or. d < 0 .or. ieee_is_nan(d))) then
      it%last_change = 0
    else
      it%last_change = ieee_value(d, ieee_positive_inf)
    end if
    ! An adjoint that overflowed is not converged, though inf <= tol * inf.
    it%adjoint_converged = ieee_is_finite(d) .and. ieee_is_finite(reference) .and. &
         d <= it%tolerance * reference
    over = it%adjoint_converged .or. it%iterations >= it%max_iterations
    ! The loop converged only if it reached its fixed point too.
    it%converged = it%adjoint_converged .and. fp_reached(it)
  end function fp_judge

  ! Whether the last complete iteration changed the state by at most the
  ! tolerance (a NaN never passes).
  logical function fp_reached(it) result(reached)
    type(instance), intent(in) :: it
    reached = .false.
    if (ieee_is_nan(it%forward_change) .or. it%forward_change < 0) return
    reached = it%forward_change <= it%tolerance
  end function fp_reached

  ! The values after the first taped iteration are all in: the relative
  ! change of the state.
  subroutine fp_settle(it)
    type(instance), intent(inout) :: it
    if (.not. it%fafter) return
    it%fafter = .false.
    if (it%fnext /= it%nbefore .or. ieee_is_nan(it%fchange) .or. ieee_is_nan(it%flargest)) then
      it%forward_change = ieee_value(it%forward_change, ieee_quiet_nan)
    else if (.not. (it%fchange > 0)) then
      it%forward_change = 0
    else if (it%flargest > 0 .and. ieee_is_finite(it%flargest)) then
      it%forward_change = it%fchange / it%flargest
    else
      it%forward_change = ieee_value(it%forward_change, ieee_positive_inf)
    end if
    it%nbefore = 0
    if (allocated(it%fbefore)) deallocate(it%fbefore)
  end subroutine fp_settle

  subroutine fp_next(it, action, count)
    type(instance), intent(inout) :: it
    integer, intent(out) :: action
    integer(i8), intent(out) :: count
    count = 0
    do
      select case (it%fphase)
      case (f_finished)
        action = oad_revolve_action_done
        return
      case (f_forward)
        if (it%by_exit .and. it%started > 0) then
          it%fphase = f_partial_restore
        else
          it%fphase = f_seed
        end if
      case (f_partial_restore)
        it%fphase = f_partial_tape
        action = oad_revolve_action_restore
        count = it%started - 1
        return
      case (f_partial_tape)
        it%fphase = f_partial_adjoint
        action = oad_revolve_action_tape
        count = it%started - 1
        return
      case (f_partial_adjoint)
        it%fphase = f_seed
        action = oad_revolve_action_adjoint
        count = it%started - 1
        return
      case (f_seed)
        if (it%by_exit .and. it%started > 0) then
          it%nfheld = it%nfheld - 1
          call oad_revolve_frames_drop(1)
        end if
        if (fp_complete(it) < 0) then
          it%fphase = f_finished
          action = oad_revolve_action_done
          return
        end if
        it%pending = 0
        it%fphase = f_restore
        action = oad_revolve_action_measure
        return
      case (f_restore)
        if (it%iterations == 0) it%largest = it%pending
        it%pending = 0
        if (it%iterations == 0) then
          it%fphase = f_check_before
        else
          it%fphase = f_tape
        end if
        action = oad_revolve_action_restore
        count = max(0_i8, fp_complete(it))
        return
      case (f_check_before)
        it%nbefore = 0
        it%fphase = f_tape
        action = oad_revolve_action_check
        return
      case (f_tape)
        if (it%iterations == 0) then
          it%fphase = f_check_after
        else
          it%fphase = f_adjoint
        end if
        action = oad_revolve_action_tape
        count = max(0_i8, fp_complete(it))
        return
      case (f_check_after)
        it%fafter = .true.
        it%fnext = 0
        it%fchange = 0
        it%flargest = 0
        it%fphase = f_adjoint
        action = oad_revolve_action_check
        return
      case (f_adjoint)
        call fp_settle(it)
        it%fphase = f_measure
        it%iterations = it%iterations + 1
        action = oad_revolve_action_adjoint
        count = max(0_i8, fp_complete(it))
        return
      case (f_measure)
        it%pending = 0
        it%fphase = f_judge
        action = oad_revolve_action_measure
        return
      case (f_judge)
        if (fp_judge(it)) then
          it%nfheld = it%nfheld - 1
          call oad_revolve_frames_drop(1)
          it%fphase = f_finished
          action = oad_revolve_action_done
          return
        end if
        it%fphase = f_restore
      end select
    end do
  end subroutine fp_next

  ! ---------------------------------------------------------- independent
  !
  ! Every iteration is taped and reversed on its own, last to first, from
  ! the loop's entry state (the one snapshot).

  subroutine ind_next(it, action, count)
    type(instance), intent(inout) :: it
    integer, intent(out) :: action
    integer(i8), intent(out) :: count
    integer(i8) :: k
    if (.not. it%begun) then
      it%begun = .true.
      it%next = it%started
    end if
    count = 0
    if (it%next == 0 .and. it%step == 0) then
      if (it%iheld) then
        it%iheld = .false.
        call oad_revolve_frames_drop(1)
      end if
      action = oad_revolve_action_done
      return
    end if
    k = it%next
    if (it%step == 0) k = k - 1
    select case (it%step)
    case (0)
      it%next = it%next - 1
      it%step = 1
      action = oad_revolve_action_restore
      count = 0
    case (1)
      it%step = 2
      action = oad_revolve_action_tape
      count = k
    case default
      it%step = 0
      action = oad_revolve_action_adjoint
      count = k
    end select
  end subroutine ind_next

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
    write (error_unit, '(A,A)') 'oad_revolve: ', message
    error stop 1
  end subroutine fail

  ! Begins the taping sweep of a loop of `steps` iterations (none when
  ! negative) holding at most `snapshots` loop states; the current mode
  ! is the taping sweep's.
  subroutine begin64(steps, snapshots, line)
    integer(i8), intent(in) :: steps, snapshots, line
    type(instance) :: it
    if (snapshots < 1) call fail('a checkpointed loop needs at least 1 snapshot')
    it%kind = k_binomial
    it%snaps = snapshots
    call binom_new(it%b, max(0_i8, steps), snapshots)
    call start(it, line)
  end subroutine begin64

  subroutine begin32(steps, snapshots, line)
    integer(int32), intent(in) :: steps, snapshots, line
    call begin64(int(steps, i8), int(snapshots, i8), int(line, i8))
  end subroutine begin32

  ! Begins the taping sweep of a loop checkpointed online with at most
  ! `snapshots` states; the loop runs itself.
  subroutine begin_online64(snapshots, line)
    integer(i8), intent(in) :: snapshots, line
    type(instance) :: it
    if (snapshots < 1) call fail('a checkpointed loop needs at least 1 snapshot')
    it%kind = k_online
    it%snaps = snapshots
    call start(it, line)
  end subroutine begin_online64

  subroutine begin_online32(snapshots, line)
    integer(int32), intent(in) :: snapshots, line
    call begin_online64(int(snapshots, i8), int(line, i8))
  end subroutine begin_online32

  ! Begins the taping sweep of a fixed-point loop whose adjoint iterates
  ! until the relative change of its state's adjoint is at most
  ! `tolerance`, or `maxiter` times; the loop runs itself.
  subroutine begin_fixed_point64(tolerance, maxiter, line)
    real(dp), intent(in) :: tolerance
    integer(i8), intent(in) :: maxiter, line
    type(instance) :: it
    if (ieee_is_nan(tolerance) .or. tolerance < 0 .or. maxiter < 1) then
      call fail('a fixed-point loop needs a tolerance of 0 or more and 1 adjoint iteration or more')
    end if
    it%kind = k_fixed_point
    it%snaps = 2
    it%tolerance = tolerance
    it%max_iterations = maxiter
    call start(it, line)
  end subroutine begin_fixed_point64

  subroutine begin_fixed_point32(tolerance, maxiter, line)
    real(dp), intent(in) :: tolerance
    integer(int32), intent(in) :: maxiter, line
    call begin_fixed_point64(tolerance, int(maxiter, i8), int(line, i8))
  end subroutine begin_fixed_point32

  subroutine begin_fixed_point64s(tolerance, maxiter, line)
    real(real32), intent(in) :: tolerance
    integer(i8), intent(in) :: maxiter, line
    call begin_fixed_point64(real(tolerance, dp), maxiter, line)
  end subroutine begin_fixed_point64s

  subroutine begin_fixed_point32s(tolerance, maxiter, line)
    real(real32), intent(in) :: tolerance
    integer(int32), intent(in) :: maxiter, line
    call begin_fixed_point64(real(tolerance, dp), int(maxiter, i8), int(line, i8))
  end subroutine begin_fixed_point32s

  ! Begins the taping sweep of a loop of independent iterations; the loop
  ! runs itself.
  subroutine begin_independent64(line)
    integer(i8), intent(in) :: line
    type(instance) :: it
    it%kind = k_independent
    it%snaps = 1
    call start(it, line)
  end subroutine begin_independent64

  subroutine begin_independent32(line)
    integer(int32), intent(in) :: line
    call begin_independent64(int(line, i8))
  end subroutine begin_independent32

  subroutine start(it, line)
    type(instance), intent(inout) :: it
    integer(i8), intent(in) :: line
    it%line = line
    it%tape_mode = our_rev_mode
    it%adjoint_mode = our_rev_mode
    call push_instance(running, nrunning, it)
  end subroutine start

  ! One more iteration of the running loop, which runs itself, is about
  ! to run: `action` 1 to store its state first, 0 to run it at once; the
  ! mode is plain.
  subroutine iteration64(action)
    integer(i8), intent(out) :: action
    logical :: store
    if (nrunning == 0) call fail('an iteration without a running loop')
    if (running(nrunning)%adjoint_sweep .or. running(nrunning)%kind == k_binomial) then
      call fail('an iteration call for a loop that does not run itself in its taping sweep')
    end if
    select case (running(nrunning)%kind)
    case (k_online)
      store = online_iteration(running(nrunning))
    case (k_fixed_point)
      associate (it => running(nrunning))
        if (it%nfheld == 2) call fp_drop_older(it)
        it%nfheld = it%nfheld + 1
        it%fheld(it%nfheld) = it%started
        it%started = it%started + 1
      end associate
      store = .true.
    case default
      associate (it => running(nrunning))
        it%started = it%started + 1
        store = .not. it%iheld
        it%iheld = .true.
      end associate
    end select
    action = oad_revolve_action_done
    if (store) then
      call oad_revolve_frame_open()
      action = oad_revolve_action_store
    end if
    our_rev_mode = plain_mode()
  end subroutine iteration64

  subroutine iteration32(action)
    integer(int32), intent(out) :: action
    integer(i8) :: a
    call iteration64(a)
    action = int(a, int32)
  end subroutine iteration32

  ! The running loop, which runs itself, ended (`how` 1: by an exit from
  ! its body, 0: through its header): its taping sweep pauses and the mode
  ! is the taping sweep's again.
  subroutine end64(how)
    integer(i8), intent(in) :: how
    if (nrunning == 0) call fail('an end without a running loop')
    if (running(nrunning)%adjoint_sweep .or. running(nrunning)%kind == k_binomial) then
      call fail('an end call for a loop that does not run itself in its taping sweep')
    end if
    associate (it => running(nrunning))
      it%by_exit = how /= 0
      if (it%kind == k_fixed_point .and. .not. it%by_exit .and. it%nfheld == 2) then
        call fp_drop_older(it)
      end if
      our_rev_mode = it%tape_mode
    end associate
    call push_instance(paused, npaused, running(nrunning))
    nrunning = nrunning - 1
  end subroutine end64

  subroutine end32(how)
    integer(int32), intent(in) :: how
    call end64(int(how, i8))
  end subroutine end32

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
  ! restore, 3 advance, 4 tape, 5 adjoint, 6 measure, 7 check) and its count
  ! (iterations to advance; the position stored or restored, or the
  ! iteration taped or reversed, counted from 0).
  subroutine next64(action, count)
    integer(i8), intent(out) :: action, count
    integer :: a
    if (nrunning == 0) call fail('next without a running loop')
    associate (it => running(nrunning))
      if (.not. it%adjoint_sweep) then
        if (it%kind /= k_binomial) then
          call fail('a next call in the taping sweep of a loop that runs itself')
        end if
        if (it%taped) then
          call push_instance(paused, npaused, it)
          nrunning = nrunning - 1
          action = oad_revolve_action_done
          count = 0
          return
        end if
      end if
      select case (it%kind)
      case (k_binomial)
        call binom_next(it%b, a, count)
      case (k_online)
        call online_next(it, a, count)
      case (k_fixed_point)
        call fp_next(it, a, count)
      case default
        call ind_next(it, a, count)
      end select
      action = a
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
        call finish(running(nrunning))
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

  ! A loop's adjoint sweep is over: what it did is kept for the queries,
  ! and a fixed-point loop whose adjoint did not converge is reported.
  subroutine finish(it)
    type(instance), intent(in) :: it
    character(len=32) :: line, n, change
    our_rev_mode = it%adjoint_mode
    select case (it%kind)
    case (k_binomial)
      last_forward = it%b%forward
    case (k_online)
      last_forward = it%forward
    case default
      last_forward = it%started
    end select
    last_iterations = 0
    last_change = 0
    last_forward_change = 0
    if (it%kind == k_fixed_point) then
      last_iterations = it%iterations
      last_change = it%last_change
      last_forward_change = max(0.0_dp, it%forward_change)
      if (ieee_is_nan(it%forward_change)) last_forward_change = it%forward_change
      if (fp_complete(it) >= 0 .and. .not. fp_reached(it)) then
        write (line, '(I0)') it%line
        write (change, '(ES10.3)') it%forward_change
        write (error_unit, '(A)') 'oad_revolve: warning: the fixed-point loop at line ' &
             // trim(line) // ' did not reach its fixed point: its last iteration changed its state by ' &
             // trim(adjustl(change)) // ' relative, and its derivative is that of a fixed point it did not reach'
      end if
      if (fp_complete(it) >= 0 .and. .not. it%adjoint_converged) then
        write (line, '(I0)') it%line
        write (n, '(I0)') it%iterations
        write (change, '(ES10.3)') it%last_change
        write (error_unit, '(A)') 'oad_revolve: warning: the adjoint of the fixed-point loop at line ' &
             // trim(line) // ' did not converge in ' // trim(n) &
             // ' iterations (last relative change ' // trim(adjustl(change)) // ')'
      end if
    end if
  end subroutine finish

  ! The adjoint of state variable `x` into the measure of the running
  ! fixed-point loop's convergence (the largest absolute value).
  subroutine measure(d)
    real(dp), intent(in) :: d(:)
    real(dp) :: m
    if (nrunning == 0) call fail('a measure without a running loop')
    associate (it => running(nrunning))
      if (ieee_is_nan(it%pending)) return
      if (any(ieee_is_nan(d))) then
        it%pending = ieee_value(it%pending, ieee_quiet_nan)
        return
      end if
      if (size(d) == 0) return
      m = maxval(abs(d))
      if (m > it%pending) it%pending = m
    end associate
  end subroutine measure

  subroutine measure_a0(x)
    type(active), intent(in) :: x
    call measure([x%d])
  end subroutine measure_a0

  subroutine measure_a1(x)
    type(active), intent(in) :: x(:)
    call measure(pack(x%d, .true.))
  end subroutine measure_a1

  subroutine measure_a2(x)
    type(active), intent(in) :: x(:,:)
    call measure(pack(x%d, .true.))
  end subroutine measure_a2

  subroutine measure_a3(x)
    type(active), intent(in) :: x(:,:,:)
    call measure(pack(x%d, .true.))
  end subroutine measure_a3

  subroutine measure_a4(x)
    type(active), intent(in) :: x(:,:,:,:)
    call measure(pack(x%d, .true.))
  end subroutine measure_a4

  subroutine measure_a5(x)
    type(active), intent(in) :: x(:,:,:,:,:)
    call measure(pack(x%d, .true.))
  end subroutine measure_a5

  subroutine measure_a6(x)
    type(active), intent(in) :: x(:,:,:,:,:,:)
    call measure(pack(x%d, .true.))
  end subroutine measure_a6

  subroutine measure_a7(x)
    type(active), intent(in) :: x(:,:,:,:,:,:,:)
    call measure(pack(x%d, .true.))
  end subroutine measure_a7

  ! A measure given as the adjoint values themselves (by hand).
  subroutine measure_r0(d)
    real(dp), intent(in) :: d
    call measure([d])
  end subroutine measure_r0

  subroutine measure_r1(d)
    real(dp), intent(in) :: d(:)
    call measure(d)
  end subroutine measure_r1

  ! Values of the running fixed-point loop's state, before its first taped
  ! iteration (kept) or after it (compared with those kept, in order).
  subroutine check(v)
    real(dp), intent(in) :: v(:)
    real(dp), allocatable :: grown(:)
    integer(i8) :: k, n
    if (nrunning == 0) call fail('a check without a running loop')
    associate (it => running(nrunning))
      n = size(v, kind=i8)
      if (.not. it%fafter) then
        if (.not. allocated(it%fbefore)) allocate(it%fbefore(max(16_i8, n)))
        if (it%nbefore + n > size(it%fbefore, kind=i8)) then
          allocate(grown(max(2 * size(it%fbefore, kind=i8), it%nbefore + n)))
          grown(1:it%nbefore) = it%fbefore(1:it%nbefore)
          call move_alloc(grown, it%fbefore)
        end if
        it%fbefore(it%nbefore + 1:it%nbefore + n) = v
        it%nbefore = it%nbefore + n
        return
      end if
      do k = 1, n
        it%fnext = it%fnext + 1
        if (it%fnext > it%nbefore .or. ieee_is_nan(v(k))) then
          it%fchange = ieee_value(it%fchange, ieee_quiet_nan)
        else if (.not. ieee_is_nan(it%fchange)) then
          if (ieee_is_nan(it%fbefore(it%fnext))) then
            it%fchange = ieee_value(it%fchange, ieee_quiet_nan)
          else
            it%fchange = max(it%fchange, abs(v(k) - it%fbefore(it%fnext)))
            it%flargest = max(it%flargest, abs(v(k)), abs(it%fbefore(it%fnext)))
          end if
        end if
      end do
    end associate
  end subroutine check

  subroutine check_a0(x)
    type(active), intent(in) :: x
    call check([x%v])
  end subroutine check_a0

  subroutine check_a1(x)
    type(active), intent(in) :: x(:)
    call check([x%v])
  end subroutine check_a1

  subroutine check_a2(x)
    type(active), intent(in) :: x(:,:)
    call check([x%v])
  end subroutine check_a2

  subroutine check_a3(x)
    type(active), intent(in) :: x(:,:,:)
    call check([x%v])
  end subroutine check_a3

  subroutine check_a4(x)
    type(active), intent(in) :: x(:,:,:,:)
    call check([x%v])
  end subroutine check_a4

  subroutine check_a5(x)
    type(active), intent(in) :: x(:,:,:,:,:)
    call check([x%v])
  end subroutine check_a5

  subroutine check_a6(x)
    type(active), intent(in) :: x(:,:,:,:,:,:)
    call check([x%v])
  end subroutine check_a6

  subroutine check_a7(x)
    type(active), intent(in) :: x(:,:,:,:,:,:,:)
    call check([x%v])
  end subroutine check_a7

  ! Values given as reals (by hand).
  subroutine check_r0(v)
    real(dp), intent(in) :: v
    call check([v])
  end subroutine check_r0

  subroutine check_r1(v)
    real(dp), intent(in) :: v(:)
    call check(v)
  end subroutine check_r1

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

  ! Untaped iterations of the loop finished last, over both sweeps.
  function oad_revolve_forward_steps() result(t)
    integer(i8) :: t
    t = last_forward
  end function oad_revolve_forward_steps

  ! Adjoint iterations of the loop finished last (a fixed-point loop; 0
  ! for the other kinds).
  function oad_revolve_adjoint_iterations() result(t)
    integer(i8) :: t
    t = last_iterations
  end function oad_revolve_adjoint_iterations

  ! The last relative change of the state's adjoint of the loop finished
  ! last (a fixed-point loop; 0 for the other kinds).
  function oad_revolve_adjoint_change() result(c)
    real(dp) :: c
    c = last_change
  end function oad_revolve_adjoint_change

  ! How much the last complete iteration of the fixed-point loop finished
  ! last changed its state, relative to the state's largest value (0 for
  ! the other kinds).
  function oad_revolve_forward_change() result(c)
    real(dp) :: c
    c = last_forward_change
  end function oad_revolve_forward_change

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
