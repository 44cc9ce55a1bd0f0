// Generated definitions of the llm op interfaces.
#include "dialects/llm/LLMInterfaces.h"

#include "dialects/llm/LLMInterfaces.cpp.inc"
