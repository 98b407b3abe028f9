/* The GPU kernels of src/accel/kernels.cu, compiled by nvcc into a fatbin
 * (one cubin per GPU architecture plus PTX), embedded in libmpi as read-only
 * data: kernels.cpp passes axon_kernels_fatbin to cuModuleLoadData. The
 * fatbin's path comes from the build (AXON_KERNELS_FATBIN, an absolute path
 * in the build tree, so VPATH builds work). Hidden: not part of the ABI. */
    /* The section nvcc uses for fatbins: cuobjdump lists the kernels. */
    .section .nv_fatbin, "a", @progbits
    .balign 64
    .globl axon_kernels_fatbin
    .hidden axon_kernels_fatbin
    .type axon_kernels_fatbin, @object
axon_kernels_fatbin:
    .incbin AXON_KERNELS_FATBIN
axon_kernels_fatbin_end:
    .size axon_kernels_fatbin, axon_kernels_fatbin_end - axon_kernels_fatbin
    .byte 0

/* No executable stack for libmpi because of this file. */
    .section .note.GNU-stack, "", @progbits
