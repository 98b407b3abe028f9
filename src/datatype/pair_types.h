// The C layouts of the MINLOC/MAXLOC value/index pairs. Each MPI pair type
// has the size of its two members and the extent of this struct.
#pragma once

namespace axon {

template <typename Value, typename Index>
struct ValueIndexPair {
    Value value;
    Index index;
};

using FloatIntPair = ValueIndexPair<float, int>;              // MPI_FLOAT_INT
using DoubleIntPair = ValueIndexPair<double, int>;            // MPI_DOUBLE_INT
using LongIntPair = ValueIndexPair<long, int>;                // MPI_LONG_INT
using IntIntPair = ValueIndexPair<int, int>;                  // MPI_2INT
using ShortIntPair = ValueIndexPair<short, int>;              // MPI_SHORT_INT
using LongDoubleIntPair = ValueIndexPair<long double, int>;   // MPI_LONG_DOUBLE_INT
using RealRealPair = ValueIndexPair<float, float>;            // MPI_2REAL (Fortran REAL, REAL)
using DoubleDoublePair = ValueIndexPair<double, double>;      // MPI_2DOUBLE_PRECISION
using IntegerIntegerPair = ValueIndexPair<int, int>;          // MPI_2INTEGER (Fortran INTEGER, INTEGER)

}  // namespace axon
