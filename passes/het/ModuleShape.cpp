// Model shapes from imported modules (see ModuleShape.h).
#include "passes/het/ModuleShape.h"

#include "dialects/llm/LLMOps.h"
#include "dialects/llm/LLMTypes.h"

#include "abi/BlockFormats.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace hetc::het {

namespace {

std::string originOf(ModuleOp module) {
  if (auto file = dyn_cast<FileLineColLoc>(module.getLoc()))
    return file.getFilename().str();
  return "the module";
}

} // namespace

int64_t cacheCapacityOf(ModuleOp module) {
  auto model = module->getAttrOfType<llm::ModelAttr>(llm::kModelAttrName);
  return model ? model.getContextLength() : 0;
}

std::optional<cost::ModelShape> shapeFromModule(ModuleOp module,
                                                std::string &error) {
  // The dialect verifies the attribute's sizes, so they are read as they are.
  auto model = module->getAttrOfType<llm::ModelAttr>(llm::kModelAttrName);
  if (!model) {
    error = "the module has no llm.model attribute (the model's "
            "hyper-parameters); import the model with hetc import, which "
            "writes it";
    return std::nullopt;
  }
  cost::ModelShape shape;
  shape.origin = originOf(module);
  shape.architecture = model.getArchitecture().str();
  shape.numLayers = model.getLayers();
  shape.dim = model.getDim();
  shape.numHeads = model.getHeads();
  shape.numKvHeads = model.getKvHeads();
  shape.headDim = model.getHeadDim();
  shape.ffnDim = model.getFfnDim();
  shape.vocabSize = model.getVocab();
  shape.expertsPerToken = model.getExpertsUsed();

  bool hasOutput = false;
  for (auto weight : module.getOps<llm::WeightOp>()) {
    auto type = cast<RankedTensorType>(weight.getType());
    std::optional<hetrt::format::BlockFormat> format =
        llm::weightStorageFormat(type.getElementType());
    if (!format) {
      std::string typeText;
      llvm::raw_string_ostream os(typeText);
      os << type;
      error = "weight @" + weight.getSymName().str() + " has type " + typeText +
              ", whose storage the planner does not know";
      return std::nullopt;
    }
    cost::WeightInfo info;
    info.name = weight.getSymName().str();
    info.elements = type.getNumElements();
    info.format = *format;
    hetrt::format::BlockLayout layout = hetrt::format::blockLayout(*format);
    // The verifier guarantees whole blocks per row.
    info.bytes = static_cast<uint64_t>(info.elements / layout.blockSize *
                                       layout.bytesPerBlock);
    cost::classifyWeight(info);
    if (info.layer >= shape.numLayers) {
      error = "weight @" + info.name + " belongs to layer " +
              std::to_string(info.layer) + " but llm.model has " +
              std::to_string(shape.numLayers) + " layers";
      return std::nullopt;
    }
    if (info.role == cost::WeightRole::Experts && type.getRank() == 3)
      shape.numExperts = std::max<int64_t>(shape.numExperts, type.getDimSize(0));
    hasOutput |= info.name == "output.weight";
    shape.weights.push_back(std::move(info));
  }
  if (shape.weights.empty()) {
    error = "the module declares no llm.weight; import the model with hetc "
            "import";
    return std::nullopt;
  }
  if (shape.numExperts != model.getExperts()) {
    error = "the weights hold " + std::to_string(shape.numExperts) +
            " experts per layer but llm.model says " +
            std::to_string(model.getExperts()) + "; re-import the model";
    return std::nullopt;
  }
  shape.tiedOutput = !hasOutput;
  return shape;
}

} // namespace hetc::het
