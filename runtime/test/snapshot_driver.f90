! Drives the snapshot store of oad_revolve (module oad_revolve_snapshots)
! through the generic calls a program uses: variables of every type, kind
! and rank 0 to 7 it holds, strings of 100 and 1,000 characters and of none,
! OpenAD's active type, stored, overwritten and restored inside a real
! schedule; each must come back bit for bit. Prints "ok NAME" per check
! and "ERROR ..." per difference; then the queries of what is held, and a
! schedule abandoned halfway. Given the argument `mismatch`, restores a
! variable of another type than the one stored, which must stop the
! program with a message. A Rust test (crates/xaif-revolve/tests/fortran.rs)
! runs it.
program snapshot_driver
  use iso_fortran_env, only: int8, int16, int32, int64, real32, real64, real128
  use OAD_rev
  use OAD_active
  use oad_revolve
  implicit none

  ! The state: one variable per type and kind (rank 0 to 2 and 7), and
  ! the same again as the copy it must equal after a restore.
  type state
    integer(int8) :: i1(3), i1_7(2, 1, 2, 1, 1, 2, 1)
    integer(int16) :: i2
    integer(int32) :: i4(2, 3)
    integer(int64) :: i8, i8v(4), i8_7(2, 2, 1, 2, 1, 1, 2)
    real(real32) :: r4, r4m(3, 2), r4_7(1, 2, 1, 2, 2, 1, 2)
    real(real64) :: r8, r8_7(2, 1, 1, 1, 1, 1, 3)
    real(real128) :: r16(2)
    complex(real32) :: c4
    complex(real64) :: c8(2, 2)
    complex(real128) :: c16
    logical(int8) :: l1(2)
    logical(int16) :: l2
    logical :: l, lv(5), l_7(2, 2, 2, 1, 1, 1, 2)
    logical(int64) :: l8(1, 1, 2)
    character(len=100) :: s100
    character(len=1000) :: s1000, s1000m(2, 2)
    character(len=0) :: s0
    character(len=3) :: s_7(1, 2, 1, 1, 2, 1, 1)
    type(active) :: a, av(3), a_7(2, 1, 1, 2, 1, 1, 2)
  end type state

  type(state) :: x, want
  character(len=16) :: arg
  integer :: nargs

  nargs = command_argument_count()
  if (nargs > 0) then
    call get_command_argument(1, arg)
    if (arg == 'mismatch') call mismatch()
  end if
  call fill(want, 1)
  call round_trip()
  call abandon_halfway()
  write (*, '(A)') 'end'

contains

  ! Distinct values of every variable, from seed k (0 scrambles).
  subroutine fill(v, k)
    type(state), intent(out) :: v
    integer, intent(in) :: k
    integer :: j
    v%i1 = int([-128, 7 * k, 127], int8)
    v%i1_7 = int(-k, int8)
    v%i2 = int(-32768 + k, int16)
    v%i4 = reshape([(j * k, j = 1, 6)], [2, 3])
    v%i8 = huge(0_int64) - k
    v%i8v = [-huge(0_int64) - 1_int64, 2_int64**40 * k, 0_int64, 1_int64]
    v%i8_7 = 2_int64**33 + k
    v%r4 = 0.1_real32 * k
    v%r4m = reshape([(tiny(1.0_real32) * j * k, j = 1, 6)], [3, 2])
    v%r4_7 = huge(1.0_real32) / (k + 1)
    v%r8 = 1.0_real64 / 3.0_real64 * k
    v%r8_7 = -0.0_real64 + k
    v%r16 = [1.0_real128 / 3.0_real128 * k, -2.0_real128 * k]
    v%c4 = cmplx(0.25 * k, -1.5, real32)
    v%c8 = cmplx(1.0_real64 / 7 * k, 2.0_real64, real64)
    v%c16 = cmplx(1.0_real128 / 11 * k, 3.0_real128, real128)
    v%l1 = [k > 0, k == 0]
    v%l2 = k == 0
    v%l = k > 0
    v%lv = [.true., k > 0, .false., k == 0, .true.]
    v%l_7 = k > 0
    v%l8 = k > 0
    v%s100 = repeat('abcdefghij', 10)
    if (k == 0) v%s100 = 'x'
    do j = 1, 1000
      v%s1000(j:j) = achar(33 + mod(j * (k + 1), 90))
    end do
    v%s1000m = v%s1000
    v%s1000m(2, 1)(1000:1000) = '#'
    v%s0 = ''
    v%s_7 = 'q' // achar(48 + k) // 'z'
    v%a%v = 1.0_real64 / 9.0_real64 * k
    v%a%d = 100.0_real64
    v%av%v = [1.0_real64, 2.0_real64, 3.0_real64] * k
    v%av%d = 200.0_real64
    v%a_7%v = 0.5_real64 * k
    v%a_7%d = 300.0_real64
  end subroutine fill

  subroutine store_all()
    call oad_revolve_store(x%i1)
    call oad_revolve_store(x%i1_7)
    call oad_revolve_store(x%i2)
    call oad_revolve_store(x%i4)
    call oad_revolve_store(x%i8)
    call oad_revolve_store(x%i8v)
    call oad_revolve_store(x%i8_7)
    call oad_revolve_store(x%r4)
    call oad_revolve_store(x%r4m)
    call oad_revolve_store(x%r4_7)
    call oad_revolve_store(x%r8)
    call oad_revolve_store(x%r8_7)
    call oad_revolve_store(x%r16)
    call oad_revolve_store(x%c4)
    call oad_revolve_store(x%c8)
    call oad_revolve_store(x%c16)
    call oad_revolve_store(x%l1)
    call oad_revolve_store(x%l2)
    call oad_revolve_store(x%l)
    call oad_revolve_store(x%lv)
    call oad_revolve_store(x%l_7)
    call oad_revolve_store(x%l8)
    call oad_revolve_store(x%s100)
    call oad_revolve_store(x%s1000)
    call oad_revolve_store(x%s1000m)
    call oad_revolve_store(x%s0)
    call oad_revolve_store(x%s_7)
    call oad_revolve_store(x%a)
    call oad_revolve_store(x%av)
    call oad_revolve_store(x%a_7)
  end subroutine store_all

  subroutine restore_all()
    call oad_revolve_restore(x%a_7)
    call oad_revolve_restore(x%av)
    call oad_revolve_restore(x%a)
    call oad_revolve_restore(x%s_7)
    call oad_revolve_restore(x%s0)
    call oad_revolve_restore(x%s1000m)
    call oad_revolve_restore(x%s1000)
    call oad_revolve_restore(x%s100)
    call oad_revolve_restore(x%l8)
    call oad_revolve_restore(x%l_7)
    call oad_revolve_restore(x%lv)
    call oad_revolve_restore(x%l)
    call oad_revolve_restore(x%l2)
    call oad_revolve_restore(x%l1)
    call oad_revolve_restore(x%c16)
    call oad_revolve_restore(x%c8)
    call oad_revolve_restore(x%c4)
    call oad_revolve_restore(x%r16)
    call oad_revolve_restore(x%r8_7)
    call oad_revolve_restore(x%r8)
    call oad_revolve_restore(x%r4_7)
    call oad_revolve_restore(x%r4m)
    call oad_revolve_restore(x%r4)
    call oad_revolve_restore(x%i8_7)
    call oad_revolve_restore(x%i8v)
    call oad_revolve_restore(x%i8)
    call oad_revolve_restore(x%i4)
    call oad_revolve_restore(x%i2)
    call oad_revolve_restore(x%i1_7)
    call oad_revolve_restore(x%i1)
  end subroutine restore_all

  ! "ok NAME" when `same`, else an error line.
  subroutine check(name, same)
    character(len=*), intent(in) :: name
    logical, intent(in) :: same
    if (same) then
      write (*, '(A,A)') 'ok ', name
    else
      write (*, '(A,A)') 'ERROR not restored: ', name
    end if
  end subroutine check

  ! Bits of a real or complex, for an exact comparison.
  elemental function bits4(r) result(b)
    real(real32), intent(in) :: r
    integer(int32) :: b
    b = transfer(r, b)
  end function bits4

  elemental function bits8(r) result(b)
    real(real64), intent(in) :: r
    integer(int64) :: b
    b = transfer(r, b)
  end function bits8

  ! Every variable of x against want; the derivative parts of the active
  ! variables against what they held before the restore (`d`).
  subroutine compare(d)
    real(real64), intent(in) :: d
    call check('integer(int8) vector', all(x%i1 == want%i1))
    call check('integer(int8) rank 7', all(x%i1_7 == want%i1_7))
    call check('integer(int16) scalar', x%i2 == want%i2)
    call check('integer(int32) matrix', all(x%i4 == want%i4))
    call check('integer(int64) scalar', x%i8 == want%i8)
    call check('integer(int64) vector', all(x%i8v == want%i8v))
    call check('integer(int64) rank 7', all(x%i8_7 == want%i8_7))
    call check('real(real32) scalar', bits4(x%r4) == bits4(want%r4))
    call check('real(real32) matrix', all(bits4(x%r4m) == bits4(want%r4m)))
    call check('real(real32) rank 7', all(bits4(x%r4_7) == bits4(want%r4_7)))
    call check('real(real64) scalar', bits8(x%r8) == bits8(want%r8))
    call check('real(real64) rank 7', all(bits8(x%r8_7) == bits8(want%r8_7)))
    call check('real(real128) vector', all(transfer(x%r16, 0_int8, 32) == transfer(want%r16, 0_int8, 32)))
    call check('complex(real32) scalar', all(bits4([x%c4%re, x%c4%im]) == bits4([want%c4%re, want%c4%im])))
    call check('complex(real64) matrix', all(bits8(x%c8%re) == bits8(want%c8%re)) &
         .and. all(bits8(x%c8%im) == bits8(want%c8%im)))
    call check('complex(real128) scalar', all(transfer(x%c16, 0_int8, 32) == transfer(want%c16, 0_int8, 32)))
    call check('logical(int8) vector', logical(all(x%l1 .eqv. want%l1)))
    call check('logical(int16) scalar', logical(x%l2 .eqv. want%l2))
    call check('logical scalar', x%l .eqv. want%l)
    call check('logical vector', all(x%lv .eqv. want%lv))
    call check('logical rank 7', all(x%l_7 .eqv. want%l_7))
    call check('logical(int64) three_tensor', logical(all(x%l8 .eqv. want%l8)))
    call check('character(len=100)', x%s100 == want%s100 .and. x%s100(100:100) == 'j')
    call check('character(len=1000)', x%s1000 == want%s1000)
    call check('character(len=1000) matrix', all(x%s1000m == want%s1000m) &
         .and. x%s1000m(2, 1)(1000:1000) == '#')
    call check('character(len=0)', len(x%s0) == 0)
    call check('character(len=3) rank 7', all(x%s_7 == want%s_7))
    call check('active scalar', bits8(x%a%v) == bits8(want%a%v) .and. bits8(x%a%d) == bits8(d))
    call check('active vector', all(bits8(x%av%v) == bits8(want%av%v)) .and. all(bits8(x%av%d) == bits8(d)))
    call check('active rank 7', all(bits8(x%a_7%v) == bits8(want%a_7%v)) &
         .and. all(bits8(x%a_7%d) == bits8(d)))
  end subroutine compare

  ! A loop of 2 iterations with 1 snapshot: its state is stored at
  ! iteration 0, overwritten, and restored in the adjoint sweep.
  subroutine round_trip()
    integer :: a, c, restores
    integer(oad_revolve_ik) :: held
    x = want
    our_rev_mode = modeType(tape=.true.)
    call oad_revolve_begin(2, 1, 10)
    do
      call oad_revolve_next(a, c)
      if (a == oad_revolve_action_done) exit
      if (a == oad_revolve_action_store) then
        call store_all()
        held = oad_revolve_snapshot_bytes()
        call check('query: 1 snapshot held', oad_revolve_snapshots_held() == 1_oad_revolve_ik)
        call check('query: bytes held', held == state_bytes())
      end if
      call fill(x, 0)
    end do
    our_rev_mode = modeType(adjoint=.true.)
    call oad_revolve_resume(10)
    restores = 0
    do
      call oad_revolve_next(a, c)
      if (a == oad_revolve_action_done) exit
      if (a == oad_revolve_action_restore) then
        restores = restores + 1
        x%a%d = -1.0_real64
        x%av%d = -1.0_real64
        x%a_7%d = -1.0_real64
        call restore_all()
        call compare(-1.0_real64)
        call fill(x, 0)
      end if
    end do
    call check('one restore', restores == 1)
    call check('query: nothing held at the end', oad_revolve_snapshots_held() == 0 &
         .and. oad_revolve_snapshot_bytes() == 0)
  end subroutine round_trip

  ! Bytes of the state's values (the value part of the active ones).
  function state_bytes() result(n)
    integer(oad_revolve_ik) :: n
    n = (storage_size(x%i1) * size(x%i1) + storage_size(x%i1_7) * size(x%i1_7) &
         + storage_size(x%i2) + storage_size(x%i4) * size(x%i4) &
         + storage_size(x%i8) + storage_size(x%i8v) * size(x%i8v) &
         + storage_size(x%i8_7) * size(x%i8_7) + storage_size(x%r4) &
         + storage_size(x%r4m) * size(x%r4m) + storage_size(x%r4_7) * size(x%r4_7) &
         + storage_size(x%r8) + storage_size(x%r8_7) * size(x%r8_7) &
         + storage_size(x%r16) * size(x%r16) + storage_size(x%c4) &
         + storage_size(x%c8) * size(x%c8) + storage_size(x%c16) &
         + storage_size(x%l1) * size(x%l1) + storage_size(x%l2) + storage_size(x%l) &
         + storage_size(x%lv) * size(x%lv) + storage_size(x%l_7) * size(x%l_7) &
         + storage_size(x%l8) * size(x%l8) + storage_size(x%s100) &
         + storage_size(x%s1000) + storage_size(x%s1000m) * size(x%s1000m) &
         + storage_size(x%s0) + storage_size(x%s_7) * size(x%s_7) &
         + storage_size(x%a%v) * (1 + size(x%av) + size(x%a_7))) / 8
  end function state_bytes

  ! A schedule abandoned after its first snapshot (an error exit from the
  ! loop), inside another loop's taping sweep: nothing is held after, and
  ! a new loop runs as if nothing had happened.
  subroutine abandon_halfway()
    integer :: a, c, n
    integer(oad_revolve_ik) :: a8, c8
    our_rev_mode = modeType(tape=.true.)
    call oad_revolve_begin(100, 3, 20)
    call oad_revolve_next(a, c)
    call store_all()
    call oad_revolve_begin(5_oad_revolve_ik, 2_oad_revolve_ik, 21_oad_revolve_ik)
    call oad_revolve_next(a, c)
    call store_all()
    call check('query: 2 snapshots held', oad_revolve_snapshots_held() == 2_oad_revolve_ik)
    call oad_revolve_abandon()
    call check('abandon: nothing held', oad_revolve_snapshots_held() == 0 &
         .and. oad_revolve_snapshot_bytes() == 0)
    ! Counters of kind oad_revolve_ik this time.
    call oad_revolve_begin(3_oad_revolve_ik, 2_oad_revolve_ik, 30_oad_revolve_ik)
    n = 0
    do
      call oad_revolve_next(a8, c8)
      if (a8 == oad_revolve_action_done) exit
      n = n + 1
    end do
    call oad_revolve_resume(30_oad_revolve_ik)
    do
      call oad_revolve_next(a8, c8)
      if (a8 == oad_revolve_action_done) exit
      n = n + 1
    end do
    call check('abandon: a new loop runs', n > 0 .and. oad_revolve_snapshots_held() == 0)
  end subroutine abandon_halfway

  ! Stores an integer and restores a real of the same size: the run-time
  ! must stop with a message.
  subroutine mismatch()
    integer :: a, c
    integer(int32) :: i
    real(real32) :: r
    i = 3
    call oad_revolve_begin(2, 1, 40)
    call oad_revolve_next(a, c)
    call oad_revolve_store(i)
    call oad_revolve_next(a, c)
    call oad_revolve_next(a, c)
    call oad_revolve_next(a, c)
    call oad_revolve_resume(40)
    call oad_revolve_next(a, c)
    call oad_revolve_next(a, c)
    call oad_revolve_restore(r)
    write (*, '(A)') 'ERROR a real restored from an integer'
    stop
  end subroutine mismatch
end program snapshot_driver
