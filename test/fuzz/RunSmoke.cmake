# Builds a seed corpus (the real stories260K header region and small synthetic
# models of two weight types) and runs the fuzzer over a fixed number of
# mutated inputs.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
execute_process(COMMAND ${HETC} synth --dim 32 --layers 1 --heads 2 --kv-heads 1
                  --ffn 64 --vocab 300 --type q8_0 -o ${WORK}/corpus/q8_0.gguf
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "hetc synth failed: ${status}")
endif()
execute_process(COMMAND ${HETC} synth --dim 32 --layers 1 --heads 2 --kv-heads 2
                  --ffn 64 --vocab 260 --type f16 --tied -o ${WORK}/corpus/f16.gguf
                RESULT_VARIABLE status)
file(READ ${SHARED}/models/stories260K.gguf header LIMIT 65536 HEX)
string(LENGTH "${header}" length)
if(length EQUAL 0)
  message(FATAL_ERROR "cannot read ${SHARED}/models/stories260K.gguf")
endif()
file(COPY ${SHARED}/models/stories260K.gguf DESTINATION ${WORK}/corpus)
execute_process(COMMAND ${FUZZER} -runs=6000 -max_len=70000 -seed=1
                  -timeout=20 ${WORK}/corpus
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the GGUF fuzzer found a failure (exit ${status}); "
                      "the reproducer is in the working directory")
endif()
