// Types, enums and attributes of the het dialect.
#ifndef HETC_DIALECTS_HET_HETATTRS_H
#define HETC_DIALECTS_HET_HETATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Types.h"

#include "dialects/het/HetEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/het/HetAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/het/HetTypes.h.inc"

#endif // HETC_DIALECTS_HET_HETATTRS_H
