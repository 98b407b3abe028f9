/* The C side of f90_attr_lang: reads attributes that Fortran set and sets
 * one for Fortran to read (attributes across languages, docs/fortran.md). */
#include <stddef.h>

#include <mpi.h>

/* The attribute C sets: its value is this variable's address. */
static int c_attribute_target = 5;

void c_read_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *expected, MPI_Fint *ok);
void c_set_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *address);

/* A value set from Fortran is read in C through a pointer to it. */
void c_read_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *expected, MPI_Fint *ok)
{
    MPI_Aint *value = NULL;
    int flag = 0;
    *ok = MPI_Comm_get_attr(MPI_Comm_f2c(*comm), *keyval, &value, &flag) == MPI_SUCCESS && flag &&
          value != NULL && *value == *expected;
}

/* A value set in C (a pointer) is read in Fortran as that address. */
void c_set_attr_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Aint *address)
{
    MPI_Comm_set_attr(MPI_Comm_f2c(*comm), *keyval, &c_attribute_target);
    *address = (MPI_Aint)&c_attribute_target;
}
