// RUN: hetc-opt %s --hetc-spirv-specialize-kernels=variant=wavefront --verify-diagnostics

// An unknown variant names the ones there are.
// expected-error @+1 {{unknown variant "wavefront"; use portable or subgroup}}
module attributes {gpu.container_module} {
  gpu.module @kernels {
  }
}
