/* Sizes of C types that C++ cannot name (_Bool, _Complex), measured by the C
 * compiler for datatype_table.cpp. */
#include <stddef.h>

const size_t c_layout_bool_size = sizeof(_Bool);
const size_t c_layout_float_complex_size = sizeof(float _Complex);
const size_t c_layout_double_complex_size = sizeof(double _Complex);
const size_t c_layout_long_double_complex_size = sizeof(long double _Complex);
