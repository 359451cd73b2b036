! Drives oad_revolve like the code xaifb generates, for many (steps,
! snapshots) pairs, on a simulated loop whose state is its position;
! prints every action as "code count", the forward steps and their
! minimum, and one line per inconsistency (a restored state that is not
! the snapshot's position, a wrong mode). A Rust test
! (crates/xaif-revolve/tests/fortran.rs) compares the output with the
! schedule of crate xaif-revolve.
program schedule_driver
  use OAD_rev
  use OAD_active
  use oad_revolve
  implicit none
  integer, parameter :: nl = 18, ns = 9
  integer :: ls(nl) = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 20, 21, 36, 55, 100, 257, 1000]
  integer :: ss(ns) = [1, 2, 3, 4, 5, 6, 10, 20, 50]
  integer :: i, j
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

  ! Runs actions until done; `pos` is the loop's state (-1: undefined).
  subroutine sweep(pos, adjoint)
    integer, intent(inout) :: pos
    logical, intent(in) :: adjoint
    integer :: a, c
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
        if (pos /= c) write (*, '(A)') 'ERROR tape of another step'
        pos = pos + 1
      case (oad_revolve_action_adjoint)
        if (.not. adjoint .or. .not. our_rev_mode%adjoint) write (*, '(A)') 'ERROR adjoint mode'
        pos = -1
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
end program schedule_driver
