# Writes the kernel library's MLIR text as a C++ raw string literal, so the
# compiler carries it without reading files at run time.
file(READ ${INPUT} text)
file(WRITE ${OUTPUT} "R\"hetc_kernels(${text})hetc_kernels\"\n")
