! Drives oad_revolve like the code xaifb generates, on a simulated loop
! whose state is its position, for every kind of schedule: binomial
! (many (steps, snapshots) pairs), online (while loops of many lengths
! and snapshots), fixed point (contractions converging or not, loops left
! by an exit) and independent iterations, and nests of them; prints every
! action as "code count", every answer of oad_revolve_iteration, the
! forward steps (and their minimum), adjoint iterations, the snapshots
! left held, and one line per inconsistency (a restored state that is not
! the snapshot's position, a wrong mode). A Rust test
! (crates/xaif-revolve/tests/fortran.rs) compares the output with the
! schedules of crate xaif-revolve.
program schedule_driver
  use OAD_rev
  use OAD_active
  use oad_revolve
  implicit none
  integer, parameter :: nl = 18, ns = 9
  integer :: ls(nl) = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 20, 21, 36, 55, 100, 257, 1000]
  integer :: ss(ns) = [1, 2, 3, 4, 5, 6, 10, 20, 50]
  integer, parameter :: nol = 10, nos = 6
  integer :: ol(nol) = [0, 1, 2, 3, 5, 10, 37, 100, 257, 1000]
  integer :: os(nos) = [1, 2, 3, 5, 10, 50]
  integer :: i, j
  ! The simulated adjoint of a fixed-point loop's state, and its factor
  ! per reversed iteration.
  real(8) :: adj = 1, q = 1
  ! The simulated state a fixed-point loop reports to oad_revolve_check
  ! (a scalar and an array), and its change over the iteration checked.
  real(8) :: fx = 1, drift = 0
  type(active) :: fa, fb(2)
  do i = 1, nl
    do j = 1, ns
      write (*, '(A,1X,I0,1X,I0)') 'pair', ls(i), ss(j)
      call reverse(ls(i), ss(j), 11)
      write (*, '(A,1X,I0,1X,I0)') 'forward', oad_revolve_forward_steps(), &
           oad_revolve_min_forward_steps(int(ls(i), 8), int(ss(j), 8))
    end do
  end do
  write (*, '(A)') 'nested'
  call nested()
  do i = 1, nol
    do j = 1, nos
      write (*, '(A,1X,I0,1X,I0)') 'online', ol(i), os(j)
      call runs_itself(1, ol(i), os(j), 0, 1d-12, 10, 1d0, 1d0)
    end do
  end do
  call runs_itself(2, 30, 2, 0, 1d-12, 1000, 0.5d0, 1d0)
  call runs_itself(2, 5, 2, 1, 1d-6, 100, 0.1d0, 1d0)
  call runs_itself(2, 1, 2, 1, 1d-6, 100, 0.1d0, 1d0)
  call runs_itself(2, 0, 2, 0, 1d-6, 100, 0.1d0, 1d0)
  call runs_itself(2, 2, 2, 1, 1d-10, 50, 0.9d0, 2d0)
  call runs_itself(2, 3, 2, 0, 1d-12, 7, 1d0, 1d0)
  call runs_itself(2, 3, 2, 0, 1d-12, 5, 0.5d0, 0d0)
  call runs_itself(2, 3, 2, 0, 1d-12, 1100, 2d0, 1d0)
  ! A loop that reached its fixed point, and one that did not: reported.
  call runs_itself(2, 30, 2, 0, 1d-12, 1000, 0.5d0, 1d0)
  drift = 1d-3
  call runs_itself(2, 30, 2, 0, 1d-12, 1000, 0.5d0, 1d0)
  drift = 0
  do i = 0, 5
    call runs_itself(3, i, 1, 0, 0d0, 1, 1d0, 1d0)
  end do
  call runs_itself(3, 37, 1, 0, 0d0, 1, 1d0, 1d0)
  write (*, '(A)') 'mixed'
  call mixed()
  write (*, '(A)') 'end'

contains

  ! Both sweeps of one loop of `steps` iterations.
  subroutine reverse(steps, snaps, line)
    integer, intent(in) :: steps, snaps, line
    integer :: pos
    our_rev_mode = modeType(tape=.true.)
    call oad_revolve_begin(steps, snaps, line)
    pos = 0
    call sweep(pos, .false.)
    write (*, '(A)') 'pause'
    our_rev_mode = modeType(adjoint=.true.)
    call oad_revolve_resume(line)
    call sweep(pos, .true.)
  end subroutine reverse

  ! Both sweeps of a loop that runs itself (kind 1 online, 2 fixed point,
  ! 3 independent) of `steps` iterations, the last one left by an exit
  ! when `by_exit` is 1; a fixed-point loop's state adjoint starts at
  ! `seed` and is multiplied by `factor` by every reversed iteration.
  subroutine runs_itself(kind, steps, snaps, by_exit, tol, maxiter, factor, seed)
    integer, intent(in) :: kind, steps, snaps, by_exit, maxiter
    real(8), intent(in) :: tol, factor, seed
    integer :: pos, k, a
    write (*, '(A,1X,I0,1X,I0,1X,I0,1X,I0)') 'kind', kind, steps, snaps, by_exit
    our_rev_mode = modeType(tape=.true.)
    select case (kind)
    case (1)
      call oad_revolve_begin_online(snaps, 12)
    case (2)
      call oad_revolve_begin_fixed_point(tol, maxiter, 12)
    case default
      call oad_revolve_begin_independent(12)
    end select
    pos = 0
    do k = 1, steps
      call oad_revolve_iteration(a)
      write (*, '(A,1X,I0)') 'i', a
      if (.not. our_rev_mode%plain .or. our_rev_mode%tape) write (*, '(A)') 'ERROR iteration mode'
      if (a == oad_revolve_action_store) call store(pos)
      pos = pos + 1
    end do
    call oad_revolve_end(by_exit)
    if (.not. our_rev_mode%tape) write (*, '(A)') 'ERROR mode after the end'
    write (*, '(A)') 'pause'
    our_rev_mode = modeType(adjoint=.true.)
    call oad_revolve_resume(12)
    adj = seed
    q = factor
    call sweep(pos, .true., kind == 3)
    write (*, '(A,1X,I0,1X,I0,1X,I0)') 'forward', oad_revolve_forward_steps(), &
         oad_revolve_adjoint_iterations(), oad_revolve_snapshots_held()
  end subroutine runs_itself

  ! Runs actions until done; `pos` is the loop's state (-1: undefined).
  ! The iterations of an independent loop are taped from its entry state.
  subroutine sweep(pos, adjoint, independent)
    integer, intent(inout) :: pos
    logical, intent(in) :: adjoint
    logical, intent(in), optional :: independent
    integer :: a, c
    logical :: each
    each = .false.
    if (present(independent)) each = independent
    do
      call oad_revolve_next(a, c)
      write (*, '(I0,1X,I0)') a, c
      select case (a)
      case (oad_revolve_action_done)
        exit
      case (oad_revolve_action_store)
        if (pos /= c) write (*, '(A)') 'ERROR store of another state'
        call store(pos)
      case (oad_revolve_action_restore)
        call restore(pos)
        if (pos /= c) write (*, '(A,1X,I0)') 'ERROR restored state', pos
      case (oad_revolve_action_advance)
        if (.not. our_rev_mode%plain .or. our_rev_mode%tape) write (*, '(A)') 'ERROR advance mode'
        pos = pos + c
      case (oad_revolve_action_tape)
        if (.not. our_rev_mode%tape) write (*, '(A)') 'ERROR tape mode'
        if (each .and. pos /= 0) write (*, '(A)') 'ERROR tape from another state'
        if (.not. each .and. pos /= c) write (*, '(A)') 'ERROR tape of another step'
        pos = c + 1
      case (oad_revolve_action_adjoint)
        if (.not. adjoint .or. .not. our_rev_mode%adjoint) write (*, '(A)') 'ERROR adjoint mode'
        pos = -1
        adj = adj * q
      case (oad_revolve_action_measure)
        call oad_revolve_measure(adj)
      case (oad_revolve_action_check)
        fa%v = fx
        fb%v = [0.25d0, -0.5d0]
        call oad_revolve_check(fa)
        call oad_revolve_check(fb)
        fx = fx + drift
      end select
    end do
  end subroutine sweep

  ! The state as values of every type and shape the calls have.
  subroutine store(pos)
    integer, intent(in) :: pos
    real(8) :: r
    integer :: iv(3)
    logical :: b
    character(len=12) :: s
    type(active) :: am(2, 2)
    r = pos
    iv = [pos, 2 * pos, 3 * pos]
    b = mod(pos, 2) == 0
    write (s, '(I0)') pos
    am%v = pos + 0.5d0
    call oad_revolve_store(r)
    call oad_revolve_store(iv)
    call oad_revolve_store(b)
    call oad_revolve_store(s)
    call oad_revolve_store(am)
  end subroutine store

  subroutine restore(pos)
    integer, intent(out) :: pos
    real(8) :: r
    integer :: iv(3), k
    logical :: b
    character(len=12) :: s
    type(active) :: am(2, 2)
    call oad_revolve_restore(am)
    call oad_revolve_restore(s)
    call oad_revolve_restore(b)
    call oad_revolve_restore(iv)
    call oad_revolve_restore(r)
    pos = int(r)
    read (s, *) k
    if (any(iv /= [pos, 2 * pos, 3 * pos]) .or. (b .neqv. (mod(pos, 2) == 0)) &
         .or. k /= pos .or. any(abs(am%v - (pos + 0.5d0)) > 0d0)) then
      write (*, '(A)') 'ERROR snapshot values'
    end if
  end subroutine restore

  ! An outer loop of 4 iterations (2 snapshots) whose every taped
  ! iteration runs an inner loop of 5 (3 snapshots): two-level
  ! checkpointing.
  subroutine nested()
    integer :: a, c, pos, inner
    type(modeType) :: outer_adjoint
    our_rev_mode = modeType(tape=.true.)
    call oad_revolve_begin(4, 2, 1)
    pos = 0
    do
      call oad_revolve_next(a, c)
      write (*, '(A,1X,I0,1X,I0)') 'outer', a, c
      if (a == oad_revolve_action_done) exit
      if (a == oad_revolve_action_store) call store(pos)
      if (a == oad_revolve_action_advance) pos = pos + c
      if (a == oad_revolve_action_tape) then
        call reverse_inner_taping()
        pos = pos + 1
      end if
    end do
    our_rev_mode = modeType(adjoint=.true.)
    outer_adjoint = our_rev_mode
    call oad_revolve_resume(1)
    do
      call oad_revolve_next(a, c)
      write (*, '(A,1X,I0,1X,I0)') 'outer', a, c
      select case (a)
      case (oad_revolve_action_done)
        exit
      case (oad_revolve_action_store)
        call store(pos)
      case (oad_revolve_action_restore)
        call restore(pos)
      case (oad_revolve_action_advance)
        pos = pos + c
      case (oad_revolve_action_tape)
        call reverse_inner_taping()
        pos = pos + 1
      case (oad_revolve_action_adjoint)
        call oad_revolve_resume(2)
        inner = -1
        call sweep(inner, .true.)
        if (.not. our_rev_mode%adjoint) write (*, '(A)') 'ERROR outer mode after the inner loop'
      end select
    end do
  end subroutine nested

  subroutine reverse_inner_taping()
    integer :: inner
    call oad_revolve_begin(5, 3, 2)
    inner = 0
    call sweep(inner, .false.)
  end subroutine reverse_inner_taping

  ! A while loop of 6 iterations (2 snapshots) whose every iteration runs
  ! a fixed-point loop of 4 (the common nest: a solver in a time loop);
  ! an advance and a taped iteration run the inner loop too.
  subroutine mixed()
    integer :: a, c, k, pos
    our_rev_mode = modeType(tape=.true.)
    call oad_revolve_begin_online(2, 1)
    pos = 0
    do k = 1, 6
      call oad_revolve_iteration(a)
      write (*, '(A,1X,I0)') 'outer i', a
      if (a == oad_revolve_action_store) call store(pos)
      call inner_plain()
      pos = pos + 1
    end do
    call oad_revolve_end(0)
    our_rev_mode = modeType(adjoint=.true.)
    call oad_revolve_resume(1)
    do
      call oad_revolve_next(a, c)
      write (*, '(A,1X,I0,1X,I0)') 'outer', a, c
      select case (a)
      case (oad_revolve_action_done)
        exit
      case (oad_revolve_action_store)
        call store(pos)
      case (oad_revolve_action_restore)
        call restore(pos)
      case (oad_revolve_action_advance)
        do k = 1, c
          call inner_plain()
        end do
        pos = pos + c
      case (oad_revolve_action_tape)
        call inner_taping()
        pos = pos + 1
      case (oad_revolve_action_adjoint)
        call oad_revolve_resume(2)
        adj = 1
        q = 0.25d0
        call sweep(k, .true.)
        if (.not. our_rev_mode%adjoint) write (*, '(A)') 'ERROR outer mode after the inner loop'
      end select
    end do
    write (*, '(A,1X,I0)') 'held', oad_revolve_snapshots_held()
  end subroutine mixed

  ! The inner loop run plain (no run-time call).
  subroutine inner_plain()
  end subroutine inner_plain

  ! The inner fixed-point loop's taping sweep.
  subroutine inner_taping()
    integer :: a, k, inner
    call oad_revolve_begin_fixed_point(1d-8, 100, 2)
    inner = 0
    do k = 1, 4
      call oad_revolve_iteration(a)
      if (a == oad_revolve_action_store) call store(inner)
      inner = inner + 1
    end do
    call oad_revolve_end(0)
  end subroutine inner_taping
end program schedule_driver
