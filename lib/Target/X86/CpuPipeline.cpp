// The x86 CPU's compilation pipeline: llm → linalg → bufferized loops → LLVM
// dialect, built only from registered passes so `hetc-opt` can replay every
// step.
#include "hetc/Target/X86.h"

#include "passes/conversion/Passes.h"
#include "passes/target/x86/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace hetc::target::x86 {

using pipeline::Phase;

namespace {
void addLinalgPhase(OpPassManager &pm, int64_t vectorBits, bool int8Dot,
                    AmxTiles amxTiles, bool floatWeightsBf16) {
  pm.addPass(hetc::conversion::createConvertLLMToLinalgPass());
  // The CPU's own blocking of the portable matmuls, before anything fuses
  // into them.
  pm.addPass(hetc::x86::createHetcX86BlockMatmulsPass(
      {vectorBits, int8Dot, amxTiles != AmxTiles::None, floatWeightsBf16}));
  if (amxTiles == AmxTiles::Emulated)
    pm.addPass(hetc::x86::createHetcX86EmulateAmxPass());
  pm.addPass(hetc::x86::createHetcX86BlockAttentionPass({vectorBits}));
  pm.addPass(createCanonicalizerPass());
  // Chains of elementwise generics (residual adds, SiLU·up, scaling) become
  // one kernel each: fewer dispatches per step and no intermediate buffers;
  // never at the price of recomputing a producer per cached position.
  pm.addPass(hetc::x86::createHetcX86FuseElementwisePass());
  pm.addPass(createCanonicalizerPass());
}

void addLoopsPhase(OpPassManager &pm) {
  pm.addPass(hetc::x86::createHetcX86PrepareEntriesPass());
  // A tile computed into a fresh tensor and inserted into a larger one is
  // computed in place instead (the tiled attention's output rows): otherwise
  // bufferization copies it, through a runtime call for strided views.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Register-blocked matmuls are built as scf.forall; as scf.parallel they
  // become kernel grids like every other parallel loop.
  pm.addPass(createForallToParallelLoopPass());
  // Lowering linalg to loops before canonicalization keeps copies as loops
  // (a canonicalized memref.copy of a strided view would call a runtime helper).
  // Parallel dimensions become scf.parallel: the kernels' grids.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(hetc::x86::createHetcX86ApproximateMathPass());
  pm.addPass(hetc::x86::createHetcX86PromoteAccumulatorsPass());
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(bufferization::createBufferResultsToOutParamsPass());
  bufferization::BufferDeallocationPipelineOptions deallocation;
  bufferization::buildBufferDeallocationPipeline(pm, deallocation);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(hetc::x86::createHetcX86ExportEntriesPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(hetc::x86::createHetcX86OutlineKernelsPass());
  // Fewer, larger dispatches per step: independent neighbours share one.
  // Identical kernels are merged first, so the fused kernels of every layer
  // call the same parts and are merged in turn.
  pm.addPass(func::createDuplicateFunctionEliminationPass());
  pm.addPass(hetc::x86::createHetcX86FuseDispatchesPass());
  // Layers have kernels of identical shapes: one copy of each is compiled.
  pm.addPass(func::createDuplicateFunctionEliminationPass());
}

void addLLVMPhase(OpPassManager &pm) {
  // Unrolled, a multi-row block write needs no temporary buffer: the default
  // lowering allocas one inside the kernel's loop, and that stack space is
  // never given back before the kernel returns (it grew with every row).
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  // AMX tile operations (AmxTiles::Hardware) become their intrinsics here.
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.amx = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  // Vector lowering leaves ub.poison for lanes that are never read.
  pm.addPass(createUBToLLVMConversionPass());
  // Rounding to bf16 (a bf16 KV cache) in integer ops: LLVM would call
  // __truncsfbf2 on CPUs without AVX512-BF16, which the loaded code cannot
  // resolve, and its instruction flushes subnormals where this keeps them.
  pm.addPass(hetc::x86::createHetcX86ExpandBf16Pass());
  pm.addPass(createArithToLLVMConversionPass());
  // Branches carry AMX tiles where a loop keeps its sums in tile registers:
  // cf's patterns with the AMX dialect's type conversion (!amx.tile →
  // !llvm.x86_amx), which convert-cf-to-llvm alone does not know.
  ConvertToLLVMPassOptions branches;
  branches.filterDialects = {"cf", "amx"};
  pm.addPass(createConvertToLLVMPass(branches));
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(hetc::x86::createHetcX86LowerDispatchPass());
  pm.addPass(hetc::x86::createHetcX86PackEntryArgsPass());
  pm.addPass(hetc::x86::createHetcX86RouteAllocationsPass());
}
} // namespace

void buildCpuPipeline(OpPassManager &pm, Phase from, Phase to,
                      int64_t vectorBits, bool int8Dot, AmxTiles amxTiles,
                      bool floatWeightsBf16) {
  auto covers = [&](Phase phase) { return from < phase && phase <= to; };
  if (covers(Phase::Linalg))
    addLinalgPhase(pm, vectorBits, int8Dot, amxTiles, floatWeightsBf16);
  if (covers(Phase::Loops))
    addLoopsPhase(pm);
  if (covers(Phase::LLVM))
    addLLVMPhase(pm);
}

namespace {
struct CpuPipelineOptions : PassPipelineOptions<CpuPipelineOptions> {
  Option<int64_t> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("width of the CPU's vector registers in bits (128, 256 "
                     "or 512)"),
      llvm::cl::init(512)};
  Option<bool> int8Dot{
      *this, "int8-dot",
      llvm::cl::desc("multiply quantized weights with int8 activations "
                     "through vpdpbusd (AVX-512 VNNI)"),
      llvm::cl::init(false)};
  Option<std::string> amxTiles{
      *this, "amx-tiles",
      llvm::cl::desc("a prompt's matmuls of interleaved weights on AMX tiles: "
                     "none, hardware, or emulated (vector code computing "
                     "the same, for CPUs without AMX)"),
      llvm::cl::init("none")};
  Option<bool> floatWeightsBf16{
      *this, "float-weights-bf16",
      llvm::cl::desc("with amx-tiles, a prompt's matmuls of f32 and f16 "
                     "weights on bf16 tiles too (rounding them to bf16)"),
      llvm::cl::init(false)};
};
} // namespace

void registerCpuPipeline() {
  PassPipelineRegistration<CpuPipelineOptions>(
      "hetc-lower-cpu",
      "Lower an imported llm module to the LLVM dialect for x86 CPUs",
      [](OpPassManager &pm, const CpuPipelineOptions &options) {
        AmxTiles amxTiles = options.amxTiles == "hardware"   ? AmxTiles::Hardware
                            : options.amxTiles == "emulated" ? AmxTiles::Emulated
                                                             : AmxTiles::None;
        if (amxTiles == AmxTiles::None && options.amxTiles != "none")
          llvm::errs() << "hetc-lower-cpu: amx-tiles is \"" << options.amxTiles
                       << "\"; choose none, hardware or emulated\n";
        buildCpuPipeline(pm, Phase::Import, Phase::LLVM, options.vectorBits,
                         options.int8Dot, amxTiles, options.floatWeightsBf16);
      });
}

} // namespace hetc::target::x86
