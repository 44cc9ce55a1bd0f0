// RUN: hetc-opt %s --hetc-gpu-prepare-kernels=subgroup-size=48 --verify-diagnostics

// A subgroup is a power of two lanes: 32 on NVIDIA, 32 or 64 on AMD.
// expected-error @+1 {{subgroup-size=48 is not a power of two; NVIDIA warps have 32 lanes, AMD wavefronts 32 or 64}}
module attributes {gpu.container_module} {
}
