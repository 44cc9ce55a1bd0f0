# The reference shapes of hetc's speed tables, shared by the benchmark
# scripts: `source` it, then `reference_model SHAPE TYPE DIR` prints the path
# of a `hetc synth` model of that shape and weight type in DIR, writing it on
# first use. Needs $hetc (the hetc binary).
reference_model() {
  local shape=$1 type=$2 dir=$3 dims
  case "$shape" in
  110m) dims=(--dim 768 --layers 12 --heads 12 --kv-heads 12 --ffn 2048 --vocab 32000) ;;
  1b) dims=(--dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 --vocab 128256
            --rope-base 500000 --tied) ;;
  # Off the table, for the "other shapes" check: grouped-query heads (4 per KV
  # head) and an FFN that is not a power of two.
  gqa) dims=(--dim 1024 --layers 8 --heads 16 --kv-heads 4 --ffn 2816 --vocab 32000) ;;
  *) echo "unknown shape '$shape' (110m, 1b or gqa)" >&2; return 2 ;;
  esac
  local model="$dir/$shape-$type.gguf"
  if [ ! -f "$model" ]; then
    "$hetc" synth "${dims[@]}" --type "$type" -o "$model.tmp" >&2 || return 1
    mv "$model.tmp" "$model"
  fi
  echo "$model"
}

# Compiles MODEL for this host into a pack beside it (again when hetc is newer)
# and prints the pack's path.
reference_pack() {
  local model=$1 pack="${1%.gguf}.hetpack"
  if [ ! -f "$pack" ] || [ "$pack" -ot "$hetc" ]; then
    "$hetc" compile "$model" -o "$pack" --cpu-variants host --context 512 -q || return 1
  fi
  echo "$pack"
}
