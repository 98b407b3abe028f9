! use mpi: MPI_Comm_spawn from Fortran. Every rank of MPI_COMM_WORLD (root 0)
! spawns 2 children of this same program with argv given as a CHARACTER
! array ended by a blank entry: 'child', '  two words  ' (kept as
! 'two words': leading and trailing blanks are not part of an argument) and
! the number of parents. The children check MPI_Comm_get_parent, their
! arguments, the remote size and MPI_APPNUM; then across the
! intercommunicator: a Bcast from parent 0 (MPI_ROOT / MPI_PROC_NULL), an
! Allreduce (each side gets the other side's sum), each child sends its rank
! to parent 0; every errcode is MPI_SUCCESS; both sides disconnect.
! A second spawn of 1 child with MPI_ARGV_NULL and MPI_ERRCODES_IGNORE: the
! child has no arguments and answers 'noargs'.
program f90_spawn
  use mpi
  implicit none
  integer :: ierr, rank, np, errs, parent, inter, n, i, v, rsize
  integer :: errcodes(2), status(MPI_STATUS_SIZE)
  integer(kind=MPI_ADDRESS_KIND) :: appnum
  logical :: flag
  character(len=16) :: args(4)
  character(len=512) :: self
  character(len=32) :: arg
  character(len=8) :: word

  errs = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  call MPI_Comm_get_parent(parent, ierr)

  if (parent /= MPI_COMM_NULL) then
    ! ---- a child
    call MPI_Comm_remote_size(parent, rsize, ierr)
    if (command_argument_count() == 0) then
      if (np /= 1) call fail('argv_null child: world size')
      word = 'noargs'
      if (rank == 0) call MPI_Send(word, 8, MPI_CHARACTER, 0, 7, parent, ierr)
    else
      if (np /= 2) call fail('child world size')
      if (command_argument_count() /= 3) call fail('child argument count')
      call get_command_argument(1, arg)
      if (arg /= 'child') call fail('argument 1: ' // trim(arg))
      call get_command_argument(2, arg)
      if (arg /= 'two words') call fail('argument 2: ' // trim(arg))
      call get_command_argument(3, arg)
      read (arg, *) n
      if (n /= rsize) call fail('argument 3 is not the number of parents')
      call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag, ierr)
      if (.not. flag .or. appnum /= 0) call fail('MPI_APPNUM')
      v = -1
      call MPI_Bcast(v, 1, MPI_INTEGER, 0, parent, ierr)
      if (v /= 4242) call fail('child bcast')
      v = rank + 1
      call MPI_Allreduce(v, n, 1, MPI_INTEGER, MPI_SUM, parent, ierr)
      if (n /= 100 * rsize * (rsize + 1) / 2) call fail('child allreduce')
      call MPI_Send(rank, 1, MPI_INTEGER, 0, 5, parent, ierr)
    end if
    call MPI_Comm_disconnect(parent, ierr)
    if (parent /= MPI_COMM_NULL) call fail('child disconnect')
    call MPI_Comm_get_parent(parent, ierr)
    if (parent /= MPI_COMM_NULL) call fail('parent after disconnect')
    call finish('f90_spawn child')
  end if

  ! ---- the parents
  call get_command_argument(0, self)
  args(1) = 'child'
  args(2) = '  two words  '
  write (args(3), '(i0)') np
  args(4) = ' '
  errcodes = -1
  call MPI_Comm_spawn(trim(self), args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, errcodes, ierr)
  if (ierr /= MPI_SUCCESS .or. inter == MPI_COMM_NULL) call fail('spawn')
  if (any(errcodes /= MPI_SUCCESS)) call fail('errcodes')
  call MPI_Comm_remote_size(inter, rsize, ierr)
  if (rsize /= 2) call fail('remote size')
  call MPI_Comm_size(inter, n, ierr)
  if (n /= np) call fail('local size of the intercommunicator')
  v = 4242
  if (rank == 0) then
    call MPI_Bcast(v, 1, MPI_INTEGER, MPI_ROOT, inter, ierr)
  else
    call MPI_Bcast(v, 1, MPI_INTEGER, MPI_PROC_NULL, inter, ierr)
  end if
  v = 100 * (rank + 1)
  call MPI_Allreduce(v, n, 1, MPI_INTEGER, MPI_SUM, inter, ierr)
  if (n /= 3) call fail('parent allreduce')
  if (rank == 0) then
    do i = 0, 1
      v = -1
      call MPI_Recv(v, 1, MPI_INTEGER, MPI_ANY_SOURCE, 5, inter, status, ierr)
      if (v /= status(MPI_SOURCE)) call fail('child answer')
    end do
  end if
  call MPI_Comm_disconnect(inter, ierr)
  if (inter /= MPI_COMM_NULL) call fail('parent disconnect')

  call MPI_Comm_spawn(trim(self), MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, &
                      MPI_ERRCODES_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) call fail('spawn with MPI_ARGV_NULL')
  if (rank == 0) then
    word = ' '
    call MPI_Recv(word, 8, MPI_CHARACTER, 0, 7, inter, MPI_STATUS_IGNORE, ierr)
    if (word /= 'noargs') call fail('argv_null child answer: ' // word)
  end if
  call MPI_Comm_disconnect(inter, ierr)
  call finish('f90_spawn')

contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'rank ', rank, ': FAIL ', what
    errs = errs + 1
  end subroutine fail
  subroutine finish(who)
    character(len=*), intent(in) :: who
    call MPI_Allreduce(MPI_IN_PLACE, errs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_Finalize(ierr)
    if (errs /= 0) then
      print *, who, ': ', errs, ' errors'
      stop 1
    end if
    if (rank == 0) print *, who, ': OK'
    stop
  end subroutine finish
end program f90_spawn
