! use mpi_f08: handle comparison with == and /=, communicators and groups,
! a user reduction op (TYPE(C_PTR) vectors, TYPE(MPI_Datatype)), attributes
! with copy/delete callbacks and MPI_COMM_DUP_FN, a Fortran error handler,
! MPI_Status_f2f08 / f082f, names, info, MPI_Alloc_mem with TYPE(C_PTR).
module f08_misc_callbacks
  use mpi_f08
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  implicit none
  integer :: deletes = 0, copies = 0, handler_calls = 0, handler_code = 0, op_calls = 0
  type(MPI_Comm) :: handler_comm
contains
  subroutine add_twice(invec, inoutvec, len, datatype)
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
    integer, pointer :: a(:), b(:)
    op_calls = op_calls + 1
    if (datatype /= MPI_INTEGER) then
      print *, 'user op: wrong datatype'
      stop 1
    end if
    call c_f_pointer(invec, a, [len])
    call c_f_pointer(inoutvec, b, [len])
    b = b + 2 * a
  end subroutine add_twice
  subroutine copy_plus(oldcomm, comm_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)
    type(MPI_Comm) :: oldcomm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
    copies = copies + 1
    attribute_val_out = attribute_val_in + extra_state
    flag = .true.
    ierror = MPI_SUCCESS
    if (oldcomm == MPI_COMM_NULL .or. comm_keyval == MPI_KEYVAL_INVALID) ierror = MPI_ERR_OTHER
  end subroutine copy_plus
  subroutine count_delete(comm, comm_keyval, attribute_val, extra_state, ierror)
    type(MPI_Comm) :: comm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    deletes = deletes + 1
    ierror = MPI_SUCCESS
    if (comm == MPI_COMM_NULL .or. comm_keyval == MPI_KEYVAL_INVALID .or. attribute_val < 0 &
        .or. extra_state /= 5) ierror = MPI_ERR_OTHER
  end subroutine count_delete
  subroutine my_handler(comm, error_code)
    type(MPI_Comm) :: comm
    integer :: error_code
    handler_calls = handler_calls + 1
    handler_code = error_code
    handler_comm = comm
  end subroutine my_handler
end module f08_misc_callbacks

program f08_misc
  use mpi_f08
  use f08_misc_callbacks
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  implicit none
  type(MPI_Comm) :: dup, dup2, half
  type(MPI_Group) :: wgrp, grp
  type(MPI_Op) :: op
  type(MPI_Errhandler) :: eh
  type(MPI_Info) :: info
  type(MPI_Datatype) :: vec
  type(MPI_Status) :: st, st2
  type(c_ptr) :: mem
  integer, pointer :: pm(:)
  integer :: rank, np, res, key, key2, i, ierr, len, fst(MPI_STATUS_SIZE)
  integer :: v(4), w(4), vv(9), vr(9), m(4, 4)
  type(MPI_Request) :: req
  integer :: pos, dims(2)
  character(len=64) :: packed
  integer(kind=MPI_ADDRESS_KIND) :: val
  logical :: flag
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=64) :: value
  double precision :: t0

  call MPI_Init()
  t0 = MPI_Wtime()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)

  ! handles compare by value
  if (MPI_COMM_WORLD /= MPI_COMM_WORLD .or. MPI_COMM_WORLD == MPI_COMM_SELF) call fail('comm ==')
  if (MPI_INTEGER == MPI_REAL .or. .not. (MPI_SUM == MPI_SUM)) call fail('datatype/op ==')
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  if (dup == MPI_COMM_WORLD .or. dup == MPI_COMM_NULL) call fail('dup handle')
  call MPI_Comm_compare(dup, MPI_COMM_WORLD, res)
  if (res /= MPI_CONGRUENT) call fail('comm_compare')
  call MPI_Comm_group(MPI_COMM_WORLD, wgrp)
  call MPI_Comm_group(dup, grp)
  call MPI_Group_compare(wgrp, grp, res)
  if (res /= MPI_IDENT) call fail('group_compare')
  call MPI_Group_free(grp)
  if (grp /= MPI_GROUP_NULL) call fail('group_free')
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half)
  call MPI_Comm_size(half, res)
  if (res /= (np + 1 - mod(rank, 2)) / 2) call fail('split size')
  call MPI_Comm_free(half)
  if (half /= MPI_COMM_NULL) call fail('comm_free')

  ! a user op
  call MPI_Op_create(add_twice, .true., op)
  if (op == MPI_OP_NULL) call fail('op_create')
  v = [(rank + i, i = 1, 4)]
  call MPI_Allreduce(v, w, 4, MPI_INTEGER, op, MPI_COMM_WORLD)
  if (np == 1) then
    if (any(w /= v)) call fail('user op np=1')
  else
    if (op_calls == 0 .and. np > 1) call fail('user op not called')
  end if
  w = [1, 2, 3, 4]
  call MPI_Reduce_local(v, w, 4, MPI_INTEGER, op)
  if (any(w /= [1, 2, 3, 4] + 2 * v)) call fail('reduce_local')
  call MPI_Op_free(op)
  if (op /= MPI_OP_NULL) call fail('op_free')

  ! attributes: copy and delete callbacks, MPI_COMM_DUP_FN
  call MPI_Comm_create_keyval(copy_plus, count_delete, key, 5_MPI_ADDRESS_KIND)
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key2, 0_MPI_ADDRESS_KIND)
  call MPI_Comm_set_attr(dup, key, 100_MPI_ADDRESS_KIND)
  call MPI_Comm_set_attr(dup, key2, 77_MPI_ADDRESS_KIND)
  call MPI_Comm_dup(dup, dup2)
  if (copies /= 1) call fail('copy callback')
  call MPI_Comm_get_attr(dup2, key, val, flag)
  if (.not. flag .or. val /= 105) call fail('copied attribute')
  call MPI_Comm_get_attr(dup2, key2, val, flag)
  if (.not. flag .or. val /= 77) call fail('MPI_COMM_DUP_FN attribute')
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag)
  if (.not. flag .or. val < 32767) call fail('MPI_TAG_UB')
  call MPI_Comm_free(dup2)
  if (deletes /= 1) call fail('delete on free')
  call MPI_Comm_delete_attr(dup, key)
  if (deletes /= 2) call fail('delete_attr')
  call MPI_Comm_free_keyval(key)
  call MPI_Comm_free_keyval(key2)

  ! a Fortran error handler
  call MPI_Comm_create_errhandler(my_handler, eh)
  call MPI_Comm_set_errhandler(dup, eh)
  call MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER)
  if (handler_calls /= 1 .or. handler_code /= MPI_ERR_OTHER .or. handler_comm /= dup) call fail('errhandler')
  call MPI_Errhandler_free(eh)
  call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN)
  call MPI_Send(v, 1, MPI_INTEGER, np + 5, 0, dup, ierr)
  if (ierr == MPI_SUCCESS) call fail('errors_return')
  ! a nonblocking call on part of a section with no uniform stride (3 of
  ! its 4 elements: no datatype describes that, and no copy may be made) is
  ! refused
  m = 1
  call MPI_Isend(m(1:3:2, 1:3:2), 3, MPI_INTEGER, rank, 0, dup, req, ierr)
  if (ierr /= MPI_ERR_BUFFER) call fail('nonblocking, part of a section: not MPI_ERR_BUFFER')

  ! statuses
  call MPI_Sendrecv(v, 2, MPI_INTEGER, rank, 9, w, 4, MPI_INTEGER, rank, 9, MPI_COMM_WORLD, st)
  call MPI_Status_f082f(st, fst)
  if (fst(MPI_SOURCE) /= rank .or. fst(MPI_TAG) /= 9) call fail('status_f082f')
  call MPI_Status_f2f08(fst, st2, ierr)
  if (st2%MPI_SOURCE /= rank .or. st2%MPI_TAG /= 9 .or. ierr /= MPI_SUCCESS) call fail('status_f2f08')
  call MPI_Get_count(st2, MPI_INTEGER, res)
  if (res /= 2) call fail('count from a converted status')

  ! a derived datatype over a contiguous buffer
  call MPI_Type_vector(3, 1, 3, MPI_INTEGER, vec)
  call MPI_Type_commit(vec)
  vv = [(i, i = 1, 9)]
  vr = 0
  call MPI_Sendrecv(vv, 1, vec, rank, 10, vr, 1, vec, rank, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  if (any(vr /= [1, 0, 0, 4, 0, 0, 7, 0, 0])) call fail('vector type')
  call MPI_Type_free(vec)
  if (vec /= MPI_DATATYPE_NULL) call fail('type_free')

  ! Pack / Unpack: a strided input, position INOUT, a strided output
  vv = [(i, i = 1, 9)]
  vr = 0
  pos = 0
  call MPI_Pack(vv(1:9:2), 5, MPI_INTEGER, packed, 64, pos, MPI_COMM_WORLD)
  if (pos /= 20) call fail('pack position')
  pos = 0
  call MPI_Unpack(packed, 64, pos, vr(2:9:2), 4, MPI_INTEGER, MPI_COMM_WORLD)
  if (pos /= 16 .or. any(vr /= [0, 1, 0, 3, 0, 5, 0, 7, 0])) call fail('unpack strided')
  dims = 0
  call MPI_Dims_create(6, 2, dims)
  if (dims(1) * dims(2) /= 6 .or. dims(1) < dims(2)) call fail('dims_create')

  ! names and info
  call MPI_Comm_set_name(dup, 'f08 dup')
  call MPI_Comm_get_name(dup, name, len)
  if (name /= 'f08 dup' .or. len /= 7) call fail('comm name')
  call MPI_Info_create(info)
  call MPI_Info_set(info, 'color', 'blue')
  call MPI_Info_get_nkeys(info, res)
  if (res /= 1) call fail('info nkeys')
  len = 64
  call MPI_Info_get_string(info, 'color', len, value, flag)
  if (.not. flag .or. value /= 'blue') call fail('info_get_string')
  call MPI_Info_free(info)
  if (info /= MPI_INFO_NULL) call fail('info_free')

  ! memory
  call MPI_Alloc_mem(16_MPI_ADDRESS_KIND, MPI_INFO_NULL, mem)
  call c_f_pointer(mem, pm, [4])
  pm = [5, 6, 7, 8]
  if (sum(pm) /= 26) call fail('alloc_mem')
  call MPI_Free_mem(pm)

  call MPI_Comm_free(dup)
  call MPI_Group_free(wgrp)
  if (MPI_Wtime() < t0) call fail('wtime')
  call MPI_Finalize()
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'f08_misc rank', rank, 'FAILED: ', what
    stop 1
  end subroutine fail
end program f08_misc
