# AX_REQUIRE_CXX20: make sure the C++ compiler accepts -std=c++20.
AC_DEFUN([AX_REQUIRE_CXX20], [
  AC_LANG_PUSH([C++])
  axon_save_CXXFLAGS="$CXXFLAGS"
  CXXFLAGS="$CXXFLAGS -std=c++20"
  AC_MSG_CHECKING([whether $CXX supports C++20])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <span>
#include <concepts>]], [[std::span<int> s; (void)s;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([a C++20 compiler is required (g++ >= 10)])])
  CXXFLAGS="$axon_save_CXXFLAGS"
  AC_LANG_POP([C++])
])
