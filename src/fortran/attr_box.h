// Attribute values set from Fortran (docs/fortran.md, "Attributes across
// languages"). MPI keeps one attribute word, but the languages read it
// differently (MPI-4.1, chapter 19, attributes across languages): a value
// set in C is a pointer, which Fortran reads as an address-sized integer; a
// value set in Fortran is an integer, which C reads through a pointer to it. So a Fortran MPI_*_SET_ATTR (and
// MPI_ATTR_PUT) stores the address of a box holding the value, and Fortran
// reads a box back as its value. Boxes are counted references: the copy and
// delete callbacks of keyvals created from Fortran take and drop them.
#ifndef AXON_FORTRAN_ATTR_BOX_H
#define AXON_FORTRAN_ATTR_BOX_H

#include <mpi.h>

namespace axon::fortran {

// A new box holding VALUE (one reference): the attribute word to store.
void* attr_box(MPI_Aint value);
// One more reference to V when it is a box (the attribute was copied).
void attr_box_ref(void* v);
// One reference less to V when it is a box (the attribute was deleted).
void attr_box_unref(void* v);
// What Fortran reads for attribute word V: a box's value, else V itself.
MPI_Aint attr_box_value(void* v);

// The C callbacks that stand for MPI_*_DUP_FN and MPI_*_NULL_DELETE_FN in
// keyvals created from Fortran: the C ones, plus the box's reference.
template <typename Handle>
int attr_box_dup(Handle, int, void*, void* in, void* out, int* flag) {
  attr_box_ref(in);
  *static_cast<void**>(out) = in;
  *flag = 1;
  return MPI_SUCCESS;
}
template <typename Handle>
int attr_box_delete(Handle, int, void* value, void*) {
  attr_box_unref(value);
  return MPI_SUCCESS;
}

}  // namespace axon::fortran

#endif  // AXON_FORTRAN_ATTR_BOX_H
