! use mpi: communicators, groups, a cartesian topology, attributes with
! Fortran copy/delete callbacks, error handlers (MPI_ERRORS_RETURN and one
! written in Fortran), names, info strings, MPI_Wtime.
module f90_misc_callbacks
  use mpi
  implicit none
  integer :: deletes = 0, handler_calls = 0, handler_code = 0
contains
  subroutine copy_plus_one(oldcomm, keyval, extra_state, attr_in, attr_out, flag, ierror)
    integer :: oldcomm, keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attr_in, attr_out
    logical :: flag
    attr_out = attr_in + 1 + extra_state
    flag = .true.
    ierror = MPI_SUCCESS
    if (oldcomm == MPI_COMM_NULL .or. keyval == MPI_KEYVAL_INVALID) ierror = MPI_ERR_OTHER
  end subroutine copy_plus_one
  subroutine count_delete(comm, keyval, attr, extra_state, ierror)
    integer :: comm, keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attr, extra_state
    deletes = deletes + 1
    ierror = MPI_SUCCESS
    if (comm == MPI_COMM_NULL .or. keyval == MPI_KEYVAL_INVALID .or. attr < 0 .or. extra_state < 0) &
      ierror = MPI_ERR_OTHER
  end subroutine count_delete
  subroutine my_handler(comm, code)
    integer :: comm, code
    handler_calls = handler_calls + 1
    handler_code = code
    if (comm == MPI_COMM_NULL) handler_code = -1
  end subroutine my_handler
end module f90_misc_callbacks

program f90_misc
  use mpi
  use f90_misc_callbacks
  implicit none
  integer :: ierr, rank, np, errs, i, dup, dup2, split, grp, wgrp, sub, cart, n, res, key, key2, eh, cls
  integer :: dims(2), coords(2), src, dst, ranks(1), tr(1), info, buflen
  logical :: periods(2), flag, rperiods(2)
  integer(kind=MPI_ADDRESS_KIND) :: val
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=MPI_MAX_ERROR_STRING) :: estr
  character(len=20) :: value
  double precision :: t0, t1

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  t0 = MPI_Wtime()

  ! communicators and groups
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_compare(dup, MPI_COMM_WORLD, res, ierr)
  if (res /= MPI_CONGRUENT) call fail('comm_compare')
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, split, ierr)
  call MPI_Comm_size(split, n, ierr)
  if (n /= (np + 1 - mod(rank, 2)) / 2) call fail('split size')
  call MPI_Comm_rank(split, i, ierr)
  if (i /= n - 1 - rank / 2) call fail('split rank (key order)')
  call MPI_Comm_group(MPI_COMM_WORLD, wgrp, ierr)
  ranks(1) = np - 1
  call MPI_Group_incl(wgrp, 1, ranks, sub, ierr)
  call MPI_Group_size(sub, n, ierr)
  if (n /= 1) call fail('group_incl size')
  tr = -5
  call MPI_Group_translate_ranks(sub, 1, (/ 0 /), wgrp, tr, ierr)
  if (tr(1) /= np - 1) call fail('translate_ranks')
  call MPI_Comm_group(split, grp, ierr)
  call MPI_Group_compare(grp, wgrp, res, ierr)
  if (np > 1 .and. res /= MPI_UNEQUAL) call fail('group_compare')
  call MPI_Group_free(grp, ierr)
  call MPI_Group_free(sub, ierr)
  call MPI_Group_free(wgrp, ierr)
  if (wgrp /= MPI_GROUP_NULL) call fail('group_free')
  call MPI_Comm_set_name(dup, 'fortran dup   ', ierr)
  call MPI_Comm_get_name(dup, name, n, ierr)
  if (name /= 'fortran dup' .or. n /= 11) call fail('comm name')
  call MPI_Comm_get_name(MPI_COMM_WORLD, name, n, ierr)
  if (name /= 'MPI_COMM_WORLD') call fail('MPI_COMM_WORLD name')

  ! a cartesian topology
  dims = 0
  call MPI_Dims_create(np, 2, dims, ierr)
  if (dims(1) * dims(2) /= np .or. dims(1) < dims(2)) call fail('dims_create')
  periods = (/ .true., .false. /)
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call MPI_Topo_test(cart, res, ierr)
  if (res /= MPI_CART) call fail('topo_test')
  call MPI_Cart_coords(cart, rank, 2, coords, ierr)
  call MPI_Cart_rank(cart, coords, i, ierr)
  if (i /= rank) call fail('cart_rank')
  call MPI_Cart_get(cart, 2, dims, rperiods, coords, ierr)
  if (.not. rperiods(1) .or. rperiods(2)) call fail('cart_get periods')
  call MPI_Cart_shift(cart, 0, 1, src, dst, ierr)
  if (dims(1) == 1 .and. (src /= rank .or. dst /= rank)) call fail('cart_shift periodic')
  call MPI_Cart_shift(cart, 1, 1, src, dst, ierr)
  if (coords(2) == dims(2) - 1 .and. dst /= MPI_PROC_NULL) call fail('cart_shift edge')
  call MPI_Comm_free(cart, ierr)

  ! attributes: a Fortran copy callback runs on MPI_Comm_dup, delete on free
  call MPI_Comm_create_keyval(copy_plus_one, count_delete, key, 10_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(dup, key, 5_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_dup(dup, dup2, ierr)
  call MPI_Comm_get_attr(dup2, key, val, flag, ierr)
  if (.not. flag .or. val /= 16) call fail('copy callback')
  call MPI_Comm_free(dup2, ierr)
  if (deletes /= 1) call fail('delete callback on free')
  call MPI_Comm_delete_attr(dup, key, ierr)
  if (deletes /= 2) call fail('delete callback on delete_attr')
  call MPI_Comm_get_attr(dup, key, val, flag, ierr)
  if (flag) call fail('deleted attribute found')
  call MPI_Comm_free_keyval(key, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key2, 0_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(dup, key2, 77_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_dup(dup, dup2, ierr)
  call MPI_Comm_get_attr(dup2, key2, val, flag, ierr)
  if (.not. flag .or. val /= 77) call fail('MPI_COMM_DUP_FN')
  call MPI_Comm_free(dup2, ierr)
  call MPI_Comm_free_keyval(key2, ierr)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (.not. flag .or. val < 32767) call fail('MPI_TAG_UB')

  ! error handlers: MPI_ERRORS_RETURN returns codes; a Fortran handler is called
  call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(i, 1, MPI_INTEGER, np + 5, 0, dup, ierr)
  if (ierr == MPI_SUCCESS) call fail('error not returned')
  call MPI_Error_class(ierr, cls, ierr)
  if (cls /= MPI_ERR_RANK) call fail('error class')
  call MPI_Error_string(MPI_ERR_RANK, estr, n, ierr)
  if (n <= 0 .or. len_trim(estr) /= n) call fail('error string')
  call MPI_Comm_create_errhandler(my_handler, eh, ierr)
  call MPI_Comm_set_errhandler(dup, eh, ierr)
  call MPI_Errhandler_free(eh, ierr)
  call MPI_Send(i, 1, MPI_INTEGER, np + 5, 0, dup, ierr)
  if (handler_calls /= 1) call fail('Fortran error handler not called')
  call MPI_Error_class(handler_code, cls, ierr)
  if (cls /= MPI_ERR_RANK) call fail('handler code')
  call MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER, ierr)
  if (handler_calls /= 2 .or. handler_code /= MPI_ERR_OTHER) call fail('call_errhandler')
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_free(split, ierr)
  if (split /= MPI_COMM_NULL) call fail('comm_free')

  ! info strings
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'axon_key  ', 'some value', ierr)
  call MPI_Info_get_nkeys(info, n, ierr)
  if (n /= 1) call fail('info nkeys')
  call MPI_Info_get_nthkey(info, 0, name, ierr)
  if (name /= 'axon_key') call fail('info nthkey')
  buflen = len(value)
  call MPI_Info_get_string(info, 'axon_key', buflen, value, flag, ierr)
  if (.not. flag .or. value /= 'some value' .or. buflen /= 10) call fail('info_get_string')
  call MPI_Info_free(info, ierr)

  t1 = MPI_Wtime()
  if (t1 < t0 .or. MPI_Wtick() <= 0d0) call fail('wtime')

  call finish('f90_misc')

contains
  include 'report.inc'
end program f90_misc
