// The het dialect class.
#ifndef HETC_DIALECTS_HET_HETDIALECT_H
#define HETC_DIALECTS_HET_HETDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/het/HetDialect.h.inc"

#endif // HETC_DIALECTS_HET_HETDIALECT_H
