! use mpi with a C helper (attr_lang_c.c): attributes across languages. A
! value set with MPI_COMM_SET_ATTR or MPI_ATTR_PUT is read in C through a
! pointer to it; copied by MPI_COMM_DUP (MPI_COMM_DUP_FN, a Fortran copy
! function) it stays readable from both; a value set in C reads in Fortran
! as the address C stored; deleting and freeing releases what was stored.
module f90_attr_lang_fns
  implicit none
contains
  subroutine plus_one(oldcomm, keyval, extra, val_in, val_out, flag, ierr)
    use mpi
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, val_in, val_out
    logical :: flag
    val_out = val_in + 1
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine plus_one
end module f90_attr_lang_fns

program f90_attr_lang
  use mpi
  use f90_attr_lang_fns
  implicit none
  integer :: ierr, rank, errs, key_dup, key_plus, key_c, key1, ok, dup, i
  integer(kind=MPI_ADDRESS_KIND) :: big, got, addr, extra
  logical :: flag

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  extra = 0
  big = -huge(big) / 3
  call MPI_COMM_CREATE_KEYVAL(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key_dup, extra, ierr)
  call MPI_COMM_CREATE_KEYVAL(plus_one, MPI_COMM_NULL_DELETE_FN, key_plus, extra, ierr)
  call MPI_COMM_CREATE_KEYVAL(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key_c, extra, ierr)

  call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, key_dup, big, ierr)
  call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, key_plus, 1000_MPI_ADDRESS_KIND, ierr)
  call c_read_attr(MPI_COMM_WORLD, key_dup, big, ok)
  if (ok == 0) call fail('C read of a Fortran value')
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, key_dup, got, flag, ierr)
  if (.not. flag .or. got /= big) call fail('Fortran read of a Fortran value')
  ! Copies, several times over (each dup holds its reference).
  do i = 1, 3
    call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
    call c_read_attr(dup, key_dup, big, ok)
    if (ok == 0) call fail('C read of an MPI_COMM_DUP_FN copy')
    call MPI_COMM_GET_ATTR(dup, key_plus, got, flag, ierr)
    if (.not. flag .or. got /= 1001) call fail('Fortran read of a Fortran copy')
    call c_read_attr(dup, key_plus, 1001_MPI_ADDRESS_KIND, ok)
    if (ok == 0) call fail('C read of a Fortran copy')
    call MPI_COMM_FREE(dup, ierr)
  end do
  call c_read_attr(MPI_COMM_WORLD, key_dup, big, ok)
  if (ok == 0) call fail('original value after its copies were freed')
  ! Replacing a value.
  call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, key_dup, 7_MPI_ADDRESS_KIND, ierr)
  call c_read_attr(MPI_COMM_WORLD, key_dup, 7_MPI_ADDRESS_KIND, ok)
  if (ok == 0) call fail('C read of a replaced value')
  ! Set in C: Fortran reads the address.
  call c_set_attr(MPI_COMM_WORLD, key_c, addr)
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, key_c, got, flag, ierr)
  if (.not. flag .or. got /= addr) call fail('Fortran read of a C value')
  ! MPI-1: an INTEGER value, read in C through a pointer (sign-extended).
  call MPI_KEYVAL_CREATE(MPI_DUP_FN, MPI_NULL_DELETE_FN, key1, 0, ierr)
  call MPI_ATTR_PUT(MPI_COMM_WORLD, key1, -123456, ierr)
  call c_read_attr(MPI_COMM_WORLD, key1, -123456_MPI_ADDRESS_KIND, ok)
  if (ok == 0) call fail('C read of an MPI_ATTR_PUT value')

  call MPI_COMM_DELETE_ATTR(MPI_COMM_WORLD, key_dup, ierr)
  call MPI_COMM_DELETE_ATTR(MPI_COMM_WORLD, key_plus, ierr)
  call MPI_COMM_DELETE_ATTR(MPI_COMM_WORLD, key_c, ierr)
  call MPI_ATTR_DELETE(MPI_COMM_WORLD, key1, ierr)
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, key_dup, got, flag, ierr)
  if (flag) call fail('deleted attribute still there')
  call MPI_COMM_FREE_KEYVAL(key_dup, ierr)
  call MPI_COMM_FREE_KEYVAL(key_plus, ierr)
  call MPI_COMM_FREE_KEYVAL(key_c, ierr)
  call MPI_KEYVAL_FREE(key1, ierr)
  call finish('f90_attr_lang')
contains
  include 'report.inc'
end program f90_attr_lang
