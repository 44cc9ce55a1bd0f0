# Builds a seed corpus (a pack of a tiny synthetic model, its manifest and
# its code) and runs the pack fuzzer over a fixed number of mutated inputs.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
execute_process(COMMAND ${HETC} synth --dim 32 --layers 1 --heads 2 --kv-heads 1
                  --ffn 64 --vocab 300 --context 32 --type q8_0 -o ${WORK}/m.gguf
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "hetc synth failed: ${status}")
endif()
execute_process(COMMAND ${HETC} compile ${WORK}/m.gguf -o ${WORK}/corpus/m.hetpack
                  --cpu-variants x86-64-v2 -q
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "hetc compile failed: ${status}")
endif()
execute_process(COMMAND ${PYTHON} ${PACKTOOL} extract ${WORK}/corpus/m.hetpack
                  manifest.json ${WORK}/corpus/manifest.json
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "extracting the manifest failed: ${status}")
endif()
execute_process(COMMAND ${PYTHON} ${PACKTOOL} extract ${WORK}/corpus/m.hetpack
                  code/x86-64-v2.so ${WORK}/corpus/code.so
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "extracting the code failed: ${status}")
endif()
execute_process(COMMAND ${FUZZER} -runs=20000 -seed=1 -timeout=20
                  ${WORK}/corpus
                WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the pack fuzzer found a failure (exit ${status}); "
                      "the reproducer is in ${WORK}")
endif()
