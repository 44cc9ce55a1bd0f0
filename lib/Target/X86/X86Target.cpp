// The x86 target on the back-end seam: the CPU pipeline for the device's
// vector width, one lowering per width among the variants asked for, and a
// shared object per variant.
#include "hetc/Target/X86.h"

#include "dialects/het/HetDialect.h"

#include "mlir/Pass/PassManager.h"

#include <map>

namespace hetc::target::x86 {

namespace {

class X86Target final : public Target {
public:
  llvm::StringRef name() const override { return "x86"; }

  llvm::StringRef devices() const override {
    return "x86 (kind cpu, arch an x86-64 level or CPU name such as "
           "x86-64-v4 or sapphirerapids)";
  }

  bool supports(het::DeviceAttr device) const override {
    return device.getKind() == het::DeviceKind::cpu &&
           vectorBitsOf(device.getArch()).has_value();
  }

  bool buildPipeline(mlir::OpPassManager &pm, het::DeviceAttr device,
                     pipeline::Phase to, std::string &error) const override {
    std::optional<int64_t> bits = vectorBitsOf(device.getArch());
    if (!bits || device.getKind() != het::DeviceKind::cpu) {
      error = "the x86 target does not generate code for device \"" +
              device.getName().str() + "\" (arch \"" +
              device.getArch().str() + "\")";
      return false;
    }
    if (to == pipeline::Phase::Pack) {
      error = "the pack phase is serialization, not a pass pipeline";
      return false;
    }
    buildCpuPipeline(pm, pipeline::Phase::Import, to, *bits,
                     hasInt8DotOf(device.getArch()));
    return true;
  }

  bool compile(mlir::ModuleOp module, het::DeviceAttr device,
               const CompileRequest &request,
               std::vector<Executable> &executables,
               std::string &error) const override {
    auto progress = [&](const std::string &line) {
      if (request.progress)
        request.progress(line);
    };
    std::vector<CpuVariant> variants;
    if (!selectVariants(request.cpuVariants, variants, error))
      return false;
    // Variants whose vectors have the same width and dot products share one
    // lowering.
    std::map<std::tuple<int64_t, bool, AmxTiles, bool>,
             mlir::OwningOpRef<mlir::ModuleOp>>
        lowered;
    for (const CpuVariant &variant : variants) {
      mlir::OwningOpRef<mlir::ModuleOp> &forWidth =
          lowered[{variant.vectorBits, variant.int8Dot, variant.amxTiles,
                   variant.floatWeightsBf16}];
      if (!forWidth) {
        progress("lowering llm → linalg → loops → LLVM for " +
                 std::to_string(variant.vectorBits) + "-bit vectors" +
                 (variant.int8Dot ? " with int8 dot products" : "") +
                 (variant.amxTiles == AmxTiles::Hardware ? " and AMX tiles"
                  : variant.amxTiles == AmxTiles::Emulated
                      ? " and emulated AMX tiles"
                      : "") +
                 (variant.floatWeightsBf16 ? " (f32 and f16 weights on bf16)"
                                           : ""));
        forWidth = module.clone();
        mlir::PassManager pm(module.getContext());
        buildCpuPipeline(pm, pipeline::Phase::Import, pipeline::Phase::LLVM,
                         variant.vectorBits, variant.int8Dot,
                         variant.amxTiles, variant.floatWeightsBf16);
        if (mlir::failed(pm.run(*forWidth))) {
          error = "the CPU lowering pipeline failed for device \"" +
                  device.getName().str() +
                  "\" (see the diagnostics above)";
          return false;
        }
      }
      progress("generating " + variant.name + " code (" + variant.cpu + ")");
      std::vector<char> code = compileSharedObject(*forWidth, variant, error);
      if (code.empty())
        return false;
      Executable executable;
      executable.variant = variant.name;
      executable.format = "elf-shared-object";
      executable.code = std::move(code);
      executable.requiredFeatures = variant.requiredFeatures;
      executables.push_back(std::move(executable));
    }
    return true;
  }
};

} // namespace

het::DeviceAttr hostDevice(mlir::MLIRContext *context) {
  context->getOrLoadDialect<het::HetDialect>();
  std::vector<CpuVariant> best;
  std::string error;
  // Every x86-64 host runs the x86-64-v2 baseline at least.
  std::string arch = selectVariants({"host"}, best, error)
                         ? best.front().cpu
                         : std::string("x86-64-v2");
  return het::DeviceAttr::get(context, "cpu0", het::DeviceKind::cpu, arch,
                              /*memory=*/0);
}

const Target &x86Target() {
  static const X86Target target;
  return target;
}

} // namespace hetc::target::x86
