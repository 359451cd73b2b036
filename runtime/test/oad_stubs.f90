! The two modules of OpenAD's run-time library that oad_revolve uses,
! reduced to what it needs, so that CI can compile and drive it without an
! OpenAD installation (an OpenAD build links the real ones).
module OAD_active
  implicit none
  type active
    real(8) :: v = 0.0d0
    real(8) :: d = 0.0d0
  end type active
end module OAD_active

module OAD_rev
  implicit none
  type modeType
    logical :: arg_store = .false.
    logical :: arg_restore = .false.
    logical :: res_store = .false.
    logical :: res_restore = .false.
    logical :: plain = .false.
    logical :: tape = .false.
    logical :: adjoint = .false.
  end type modeType
  type(modeType), save :: our_rev_mode
end module OAD_rev
