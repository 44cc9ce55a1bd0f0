# lit configuration of the hetc test suite.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "HETC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.hetc_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "lib"]

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# `not` and `count` at the start of a RUN line are found through PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

config.substitutions.append(("%shared", config.hetc_shared_dir))
config.substitutions.append(("%hetc_src", os.path.dirname(config.test_source_root)))
# Replaces lit's default %python (whatever interpreter runs lit): the NumPy reference in
# test/reference needs Debian's python3, which has python3-numpy.
config.substitutions = [sub for sub in config.substitutions if sub[0] != "%python"]
config.substitutions.append(("%python", "/usr/bin/python3"))
tool_dirs = [config.hetc_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["hetc-opt", "hetc", "hetrt-capi-generate", "hetrt-capi-devices", "hetrt-capi-sequences"], tool_dirs)
config.substitutions.append(("%hetrt_run", os.path.join(config.hetc_tools_dir, "hetrt-run")))
config.substitutions.append(("%hetrt_synth", os.path.join(config.hetc_tools_dir, "hetrt-synth")))
config.substitutions.append(("%hetc_engine_tests", os.path.join(config.hetc_tools_dir, "HetcEngineTests")))
config.substitutions.append(("%hetrt_lib", os.path.join(config.hetc_obj_root, "lib", "libhetrt.so")))

# Tests never touch the user's pack cache: GGUF runs compile into one under the
# build tree unless a test names its own HETC_CACHE_DIR.
config.environment["HETC_CACHE_DIR"] = os.path.join(config.test_exec_root, "pack-cache")

# Tests of Vulkan execution need a Vulkan device (lavapipe on machines without
# a GPU; scripts/setup.sh installs it). Without one they are reported as
# unsupported, with the devices the runtime found.
import subprocess
_devices = subprocess.run([os.path.join(config.hetc_tools_dir, "hetrt-run"), "--list-devices"],
                          capture_output=True, text=True)
if "vulkan0" in _devices.stdout:
    config.available_features.add("vulkan")
else:
    lit_config.note("no Vulkan device, so tests that REQUIRE vulkan are unsupported; "
                    "the runtime found: " + (_devices.stdout + _devices.stderr).strip())

# The official OpenAI client library for the serve tests, which
# scripts/setup.sh installs from the npm registry with Node.js.
_openai = os.path.join(os.path.dirname(config.test_source_root), "test", "clients",
                       "openai", "node_modules", "openai", "package.json")
if os.path.exists(_openai):
    config.available_features.add("openai-npm")
else:
    lit_config.note("the openai npm package is not installed (scripts/setup.sh installs "
                    "it), so tests that REQUIRE openai-npm are unsupported")

# CPU features of this machine that some tests need: AVX-512 VNNI (the
# avx512-vnni and emulated AMX variants) and AMX int8 and bf16 tiles (the
# avx512-amx variants run only there; elsewhere their test is reported
# unsupported).
try:
    with open("/proc/cpuinfo") as cpuinfo:
        _flags = set()
        for line in cpuinfo:
            if line.startswith("flags"):
                _flags.update(line.split(":", 1)[1].split())
except OSError:
    _flags = set()
if "avx512_vnni" in _flags:
    config.available_features.add("avx512vnni")
if {"amx_tile", "amx_int8", "amx_bf16"} <= _flags:
    config.available_features.add("amx")
else:
    lit_config.note("this CPU has no AMX int8 and bf16 tiles, so tests that REQUIRE amx "
                    "are unsupported (the AMX kernels are checked in emulation)")

# The NVPTX target assembles with the CUDA toolkit's ptxas ($CUDA_HOME, else
# /usr/local/cuda, as hetc itself looks); without it, tests that REQUIRE
# ptxas are reported unsupported.
_cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
_ptxas = os.path.join(_cuda_home, "bin", "ptxas")
if os.access(_ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", _ptxas))
    if "CUDA_HOME" in os.environ:
        config.environment["CUDA_HOME"] = os.environ["CUDA_HOME"]
else:
    lit_config.note("no ptxas at " + _ptxas + ", so tests that REQUIRE ptxas are "
                    "unsupported; install the CUDA toolkit or set CUDA_HOME")

# The AMDGPU target links against the ROCm device libraries (rocm-device-libs,
# which scripts/setup.sh installs), found where hetc looks for them.
_rocm_roots = [os.environ.get("ROCM_PATH") or "", "/opt/rocm", "/usr/lib/x86_64-linux-gnu"]
if any(root and os.path.exists(os.path.join(root, "amdgcn", "bitcode", "ocml.bc"))
       for root in _rocm_roots):
    config.available_features.add("rocm-device-libs")
else:
    lit_config.note("no ROCm device libraries (amdgcn/bitcode/ocml.bc), so tests that "
                    "REQUIRE rocm-device-libs are unsupported; install rocm-device-libs")
