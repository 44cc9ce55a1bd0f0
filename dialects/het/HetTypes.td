// Types of the het dialect.
#ifndef HETC_HET_TYPES_TD
#define HETC_HET_TYPES_TD

include "dialects/het/HetDialect.td"

def Het_TokenType : Het_Type<"Token", "token"> {
  let summary = "Completion of an asynchronous transfer";
  let description = [{
    Produced by `het.transfer`; `het.wait` blocks until the transfers whose
    tokens it takes have completed.
  }];
}

#endif // HETC_HET_TYPES_TD
