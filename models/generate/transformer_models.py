"""Transformer models, per leaf module (plus one parameter-free "attention core" per layer).

One sample is one sequence of seq_len tokens.  fwd_flops = 2 x multiply-accumulates of every
matrix product over the seq_len tokens (Q/K/V, output projection, FFN, MLM/LM head) plus the
attention core, QK^T and attention x V: 2 x 2 x seq_len^2 x hidden per layer (dense, causal
masking not discounted).  Embedding look-ups, LayerNorm, RMSNorm, GELU, SiLU and the SwiGLU
product, softmax, rotary and ALiBi position terms, residual adds and bias adds count 0.  Layer
names are the PyTorch module names of the Hugging Face implementations (MPT: llm-foundry's, which
Hugging Face loads).  Transformers carry no BatchNorm, so buffer_elems is 0 (GPT-2's causal-mask
buffer in older transformers versions is a bool tensor that is not counted).

Four families, each a function of the same hyperparameters (hidden, layers, heads, seq_len, vocab,
and optionally kv_heads, ffn, tied_embeddings), the ones a scenario's inline model gives:
sim/model/transformer_family.cpp builds the same tables in C++ with the same formulas, and
tests/unit/model_transformer_family.cpp compares the two layer by layer.

  gpt    GPT-2 (GPT2LMHeadModel): LayerNorm with bias, biases everywhere, learned positions
         (seq_len of them), fused c_attn, GELU FFN; LM head tied to wte by default.
  bert   BERT for pre-training (BertForPreTraining): embeddings of words, positions and 2 token
         types, post-LayerNorm layers, pooler, MLM transform and decoder, NSP head; decoder
         tied to the word embeddings by default.
  llama  Llama (LlamaForCausalLM): RMSNorm (one weight), no biases, rotary positions (no
         parameters), separate q/k/v projections with GQA, SwiGLU FFN of three matrices
         (gate, up, down; `ffn` is their inner size); LM head untied by default.
  mpt    MPT (MPTForCausalLM): ALiBi (no position embedding), LayerNorm without bias and no
         biases (no_bias), fused Wqkv, GELU FFN; LM head tied to wte by default.

kv_heads (default: heads) shrinks the K and V projections to kv_heads x head_dim outputs (GQA);
the attention core's FLOPs do not change (every query head still scores every position).  ffn
defaults to 4 x hidden.  A tied LM head's weight is counted once (in the embedding); the head's
layer keeps its FLOPs.
"""

from layer_table import LayerTable


def arch(hidden, layers, heads, seq_len, vocab, ffn, max_positions=None, kv_heads=None):
    """The facts dtsim keeps: max_positions only for learned positions, kv_heads only under GQA."""
    a = {"hidden": hidden, "layers": layers, "heads": heads, "seq_len": seq_len,
         "vocab": vocab, "ffn": ffn}
    if max_positions is not None:
        a["max_positions"] = max_positions
    if kv_heads is not None and kv_heads != heads:
        a["kv_heads"] = kv_heads
    return a


def add_linear(t, name, fan_in, fan_out, tokens, bias=True, then=None, input=None):
    params = [fan_in * fan_out] + ([fan_out] if bias else [])
    t.add(name, "linear", params, fan_in * fan_out * tokens, fan_out * tokens, then=then, input=input)


def add_layernorm(t, name, hidden, tokens, bias=True, then=None):
    t.add(name, "layernorm", [hidden] + ([hidden] if bias else []), 0, hidden * tokens, then=then)


def add_rmsnorm(t, name, hidden, tokens):
    """RMSNorm (Zhang & Sennrich 2019): one weight, no bias, no mean.  Kind "layernorm" with op "rms":
    its memory is a LayerNorm's (a normalisation of `hidden` elements per token, no matrix product);
    its eager kernels are not (dtsim's roofline)."""
    t.add(name, "layernorm", [hidden], 0, hidden * tokens, op="rms")


def add_embedding(t, name, rows, hidden, tokens, then=None):
    t.add(name, "embedding", [rows * hidden], 0, hidden * tokens, then=then)


def add_attention_core(t, name, hidden, seq):
    """QK^T (seq x seq x hidden MACs) and attention x V (the same); no parameters.

    Counted dense: a causal mask does not halve it, as Megatron-LM counts it (Narayanan et al.
    2021, arXiv 2104.04473, the FLOP count 96 B s l h^2 (1 + s/6h + V/16lh) of its appendix, and
    Korthikanti et al. 2022, arXiv 2205.05198, Appendix A, 72 B s l h^2 (1 + s/6h + V/12hl): their
    s/6h term is these two products over every (query, key) pair).  GQA shares K/V heads but every
    query head still scores all positions, so kv_heads does not change it."""
    t.add(name, "attention", [], 2 * seq * seq * hidden, seq * hidden)


def add_lm_head(t, name, hidden, vocab, seq, tied):
    """The LM head's matrix product over every token; its weight is the embedding's when tied."""
    t.add(name, "linear", [] if tied else [vocab * hidden], hidden * vocab * seq, vocab * seq)


def check_heads(hidden, heads, kv_heads):
    assert hidden % heads == 0, f"{heads} heads do not divide hidden {hidden}"
    assert heads % kv_heads == 0, f"{kv_heads} kv_heads do not divide {heads} heads"
    return hidden // heads * kv_heads  # the width of K (and of V)


def bert(name, source, hidden, layers, heads, seq, vocab, ffn=None, kv_heads=None, tied=True,
         max_positions=None):
    """BertForPreTraining; max_positions (default seq) is the position table's rows."""
    ffn = ffn or 4 * hidden
    kv_heads = kv_heads or heads
    kv_width = check_heads(hidden, heads, kv_heads)
    positions = max_positions or seq
    t = LayerTable(name, source, seq,
                   arch(hidden, layers, heads, seq, vocab, ffn, positions, kv_heads))
    t.begin_block("bert.embeddings")
    add_embedding(t, "bert.embeddings.word_embeddings", vocab, hidden, seq)
    add_embedding(t, "bert.embeddings.position_embeddings", positions, hidden, seq, then=["add"])
    add_embedding(t, "bert.embeddings.token_type_embeddings", 2, hidden, seq, then=["add"])  # type_vocab_size 2
    add_layernorm(t, "bert.embeddings.LayerNorm", hidden, seq, then=["dropout"])
    for i in range(layers):
        p = f"bert.encoder.layer.{i}"
        t.begin_block(p)
        layer_input = t.layers[-1]["name"]
        add_linear(t, f"{p}.attention.self.query", hidden, hidden, seq)
        add_linear(t, f"{p}.attention.self.key", hidden, kv_width, seq, input=layer_input)
        add_linear(t, f"{p}.attention.self.value", hidden, kv_width, seq, input=layer_input)
        add_attention_core(t, f"{p}.attention.self.core", hidden, seq)
        add_linear(t, f"{p}.attention.output.dense", hidden, hidden, seq, then=["dropout", "add"])
        add_layernorm(t, f"{p}.attention.output.LayerNorm", hidden, seq)
        add_linear(t, f"{p}.intermediate.dense", hidden, ffn, seq, then=["gelu"])
        add_linear(t, f"{p}.output.dense", ffn, hidden, seq, then=["dropout", "add"])
        add_layernorm(t, f"{p}.output.LayerNorm", hidden, seq)
    encoder_output = t.layers[-1]["name"]
    t.begin_block("heads")
    add_linear(t, "bert.pooler.dense", hidden, hidden, 1, then=["tanh"])
    add_linear(t, "cls.predictions.transform.dense", hidden, hidden, seq, then=["gelu"], input=encoder_output)
    add_layernorm(t, "cls.predictions.transform.LayerNorm", hidden, seq)
    t.add("cls.predictions.decoder", "linear", ([] if tied else [hidden * vocab]) + [vocab],
          hidden * vocab * seq, vocab * seq)
    add_linear(t, "cls.seq_relationship", hidden, 2, 1, input="bert.pooler.dense")
    t.end_block()
    return t


def bert_large(seq):
    hidden, layers, heads, vocab, ffn, positions = 1024, 24, 16, 30522, 4096, 512
    name = "bert-large" if seq == 512 else f"bert-large-seq{seq}"
    return bert(
        name,
        "BERT-large uncased as pre-trained (Hugging Face BertForPreTraining = BertModel with "
        "pooler + MLM and NSP heads; NVIDIA DeepLearningExamples trains the same model): hidden "
        "1024, 24 layers, 16 heads, FFN 4096, vocab 30522 (not padded), 512 positions, 2 token "
        "types; MLM decoder weight tied to the word embeddings (counted once), decoder bias "
        "listed with the decoder (PyTorch registers it before the MLM transform). BertModel "
        f"alone = 335,141,888 params. seq_len {seq}; the MLM head is computed on every token. "
        "Generated by models/generate/transformer_models.py.",
        hidden, layers, heads, seq, vocab, ffn, max_positions=positions)


def gpt(name, source, hidden, layers, heads, seq, vocab=50257, ffn=None, kv_heads=None, tied=True):
    """GPT-2 architecture (Hugging Face GPT2LMHeadModel): pre-LayerNorm blocks, learned position
    embeddings (max_positions = seq), FFN 4 x hidden unless given, LM head tied to wte (counted
    once) unless untied; under GQA the fused c_attn projects to hidden + 2 x kv width."""
    ffn = ffn or 4 * hidden
    kv_heads = kv_heads or heads
    kv_width = check_heads(hidden, heads, kv_heads)
    t = LayerTable(name, source, seq, arch(hidden, layers, heads, seq, vocab, ffn, seq, kv_heads))
    t.begin_block("transformer.embeddings")
    add_embedding(t, "transformer.wte", vocab, hidden, seq)
    add_embedding(t, "transformer.wpe", seq, hidden, seq, then=["add", "dropout"])  # drop(wte + wpe)
    for i in range(layers):
        p = f"transformer.h.{i}"
        t.begin_block(p)
        add_layernorm(t, f"{p}.ln_1", hidden, seq)
        add_linear(t, f"{p}.attn.c_attn", hidden, hidden + 2 * kv_width, seq)
        add_attention_core(t, f"{p}.attn.core", hidden, seq)
        add_linear(t, f"{p}.attn.c_proj", hidden, hidden, seq, then=["dropout", "add"])
        add_layernorm(t, f"{p}.ln_2", hidden, seq)
        add_linear(t, f"{p}.mlp.c_fc", hidden, ffn, seq, then=["gelu_tanh"])  # gelu_new
        add_linear(t, f"{p}.mlp.c_proj", ffn, hidden, seq, then=["dropout", "add"])
    t.end_block()
    add_layernorm(t, "transformer.ln_f", hidden, seq)
    add_lm_head(t, "lm_head", hidden, vocab, seq, tied)
    return t


def llama(name, source, hidden, layers, heads, seq, vocab, ffn=None, kv_heads=None, tied=False):
    """Llama architecture (Hugging Face LlamaForCausalLM).  Hugging Face registers a decoder
    layer's two RMSNorms after its MLP, so in model.parameters() order (DDP's buckets) those two
    small tensors come after down_proj; they are listed here in forward order."""
    ffn = ffn or 4 * hidden
    kv_heads = kv_heads or heads
    kv_width = check_heads(hidden, heads, kv_heads)
    t = LayerTable(name, source, seq, arch(hidden, layers, heads, seq, vocab, ffn, None, kv_heads))
    add_embedding(t, "model.embed_tokens", vocab, hidden, seq)
    for i in range(layers):
        p = f"model.layers.{i}"
        t.begin_block(p)
        add_rmsnorm(t, f"{p}.input_layernorm", hidden, seq)
        norm = t.layers[-1]["name"]
        # rotary positions (Su et al. 2021) on the queries and the keys
        add_linear(t, f"{p}.self_attn.q_proj", hidden, hidden, seq, bias=False, then=["rotary"])
        add_linear(t, f"{p}.self_attn.k_proj", hidden, kv_width, seq, bias=False, then=["rotary"], input=norm)
        add_linear(t, f"{p}.self_attn.v_proj", hidden, kv_width, seq, bias=False, input=norm)
        add_attention_core(t, f"{p}.self_attn.core", hidden, seq)
        add_linear(t, f"{p}.self_attn.o_proj", hidden, hidden, seq, bias=False, then=["add"])
        add_rmsnorm(t, f"{p}.post_attention_layernorm", hidden, seq)
        norm = t.layers[-1]["name"]
        add_linear(t, f"{p}.mlp.gate_proj", hidden, ffn, seq, bias=False, then=["silu"])
        add_linear(t, f"{p}.mlp.up_proj", hidden, ffn, seq, bias=False, then=["mul"], input=norm)
        add_linear(t, f"{p}.mlp.down_proj", ffn, hidden, seq, bias=False, then=["add"])
    t.end_block()
    add_rmsnorm(t, "model.norm", hidden, seq)
    add_lm_head(t, "lm_head", hidden, vocab, seq, tied)
    return t


def mpt(name, source, hidden, layers, heads, seq, vocab, ffn=None, kv_heads=None, tied=True):
    """MPT architecture (llm-foundry MPTForCausalLM, which Hugging Face loads with
    trust_remote_code): MPTModel makes no wpe under ALiBi, and no_bias removes the bias of every
    module, LayerNorms included.  A tied head is F.linear over wte's weight (no module of its
    own); it is the "lm_head" layer here, as in the other families."""
    ffn = ffn or 4 * hidden
    kv_heads = kv_heads or heads
    kv_width = check_heads(hidden, heads, kv_heads)
    t = LayerTable(name, source, seq, arch(hidden, layers, heads, seq, vocab, ffn, None, kv_heads))
    add_embedding(t, "transformer.wte", vocab, hidden, seq)
    for i in range(layers):
        p = f"transformer.blocks.{i}"
        t.begin_block(p)
        add_layernorm(t, f"{p}.norm_1", hidden, seq, bias=False)
        add_linear(t, f"{p}.attn.Wqkv", hidden, hidden + 2 * kv_width, seq, bias=False)
        add_attention_core(t, f"{p}.attn.core", hidden, seq)
        add_linear(t, f"{p}.attn.out_proj", hidden, hidden, seq, bias=False, then=["add"])
        add_layernorm(t, f"{p}.norm_2", hidden, seq, bias=False)
        add_linear(t, f"{p}.ffn.up_proj", hidden, ffn, seq, bias=False, then=["gelu"])
        add_linear(t, f"{p}.ffn.down_proj", ffn, hidden, seq, bias=False, then=["add"])
    t.end_block()
    add_layernorm(t, "transformer.norm_f", hidden, seq, bias=False)
    add_lm_head(t, "lm_head", hidden, vocab, seq, tied)
    return t


GEN = "Generated by models/generate/transformer_models.py."

# Brown et al. 2020 (arXiv 2005.14165), Table 2.1: (name, label, n_layers, d_model, n_heads, note).
# Every size has context 2048; d_head = d_model / n_heads.  Two rows of the table contradict
# themselves, and the sizes that heads divide are used, with the parameter count the table gives.
GPT3_SIZES = [
    ("gpt3-125m", "Small (125M)", 12, 768, 12, ""),
    ("gpt3-350m", "Medium (350M)", 24, 1024, 16, ""),
    ("gpt3-760m", "Large (760M)", 24, 1536, 16, ""),
    ("gpt3-1.3b", "XL (1.3B)", 24, 2048, 16,
     "; the table prints 24 heads of d_head 128, which d_model 2048 cannot hold: 16 heads of 128 "
     "used (attention params and FLOPs depend on d_model only, and give the table's 1.3B)"),
    ("gpt3-2.7b", "2.7B", 32, 2560, 32, ""),
    ("gpt3-6.7b", "6.7B", 32, 4096, 32, ""),
    ("gpt3-13b", "13B", 40, 5120, 40,
     "; the table prints d_model 5140, which its 40 heads of 128 contradict: 5120 = 40 x 128 used"),
    ("gpt3-175b", "175B", 96, 12288, 96, ""),
]


def gpt3(name, label, layers, hidden, heads, note):
    return gpt(
        name,
        f"GPT-3 {label} (Brown et al. 2020, Table 2.1: {layers} layers, d_model {hidden}, "
        f"{heads} heads of {hidden // heads}, context 2048{note}) built as the GPT-2 architecture "
        "with the GPT-2 BPE vocab 50257, FFN 4 x d_model and tied LM head; attention FLOPs counted "
        "dense (the paper alternates dense and locally banded sparse layers). " + GEN,
        hidden, layers, heads, 2048)


# Meta, "The Llama 3 Herd of Models" (arXiv 2407.21783), Table 3: (name, label, layers, model
# dimension, FFN dimension, attention heads); every size has 8 key/value heads.
LLAMA3_SIZES = [
    ("llama3-8b", "8B", 32, 4096, 14336, 32),
    ("llama3-70b", "70B", 80, 8192, 28672, 64),
    ("llama3-405b", "405B", 126, 16384, 53248, 128),
]


def llama3(name, label, layers, hidden, ffn, heads):
    return llama(
        name,
        f"Llama 3 {label} (Meta, The Llama 3 Herd of Models, arXiv 2407.21783, Table 3: {layers} "
        f"layers, model dimension {hidden}, FFN dimension {ffn}, {heads} attention heads, 8 "
        "key/value heads, SwiGLU, RoPE) as Hugging Face LlamaForCausalLM: RMSNorm, no biases, no "
        "position embedding, untied LM head; vocab 128256 (the tokenizer's 128,000 plus 256 "
        "special tokens, vocab_size of the meta-llama/Meta-Llama-3 config.json; Table 3 rounds it "
        "to 128,000), seq_len 8192 (the pre-training context, section 3.4.1). " + GEN,
        hidden, layers, heads, 8192, 128256, ffn=ffn, kv_heads=8)


# MosaicML's MPT configurations (Hugging Face mosaicml/mpt-7b and mosaicml/mpt-30b config.json):
# (name, label, n_layers, d_model, n_heads, max_seq_len); expansion_ratio 4, vocab_size 50432,
# no_bias true, attn_config.alibi true.
MPT_SIZES = [
    ("mpt-7b", "7B", 32, 4096, 32, 2048),
    ("mpt-30b", "30B", 48, 7168, 64, 8192),
]


def mpt_named(name, label, layers, hidden, heads, seq):
    return mpt(
        name,
        f"MPT-{label} (MosaicML, Hugging Face mosaicml/{name} config.json: d_model {hidden}, "
        f"n_layers {layers}, n_heads {heads}, expansion_ratio 4, max_seq_len {seq}, vocab_size "
        "50432, no_bias, attn_config.alibi) as llm-foundry's MPTForCausalLM: ALiBi and no position "
        "embedding, LayerNorm without bias, no biases, fused Wqkv, GELU FFN 4 x d_model, LM head "
        "tied to wte (counted once). " + GEN,
        hidden, layers, heads, seq, 50432)


# Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models" (arXiv
# 2205.05198), Table 3: the GPT models of its Selene runs, (name, label, attention heads, hidden
# size, layers); every one has sequence length 2048 and vocabulary 51200.  51200 is the GPT-2 BPE
# vocabulary (50257) as Megatron-LM pads it: up to a multiple of make_vocab_size_divisible_by (128)
# x tensor-parallel size (8 in every run of the table), 1024.  gpt3-175b above keeps the unpadded
# 50257 of Brown et al.; megatron-gpt-175b is the same shape with Megatron's padded vocabulary.
MEGATRON_GPT_SIZES = [
    ("megatron-gpt-22b", "22B", 64, 6144, 48),
    ("megatron-gpt-175b", "175B (GPT-3)", 96, 12288, 96),
    ("megatron-gpt-530b", "530B (MT-NLG)", 128, 20480, 105),
    ("megatron-gpt-1t", "1T", 160, 25600, 128),
]


def megatron_gpt(name, label, heads, hidden, layers):
    return gpt(
        name,
        f"Megatron-LM GPT {label} (Korthikanti et al. 2022, Reducing Activation Recomputation in "
        f"Large Transformer Models, arXiv 2205.05198, Table 3: {heads} attention heads, hidden size "
        f"{hidden}, {layers} layers; sequence length 2048, vocabulary 51200, the GPT-2 BPE vocab "
        "50257 padded by Megatron-LM to a multiple of 128 x tensor-parallel size 8) built as the "
        "GPT-2 architecture: learned positions, LayerNorm, GELU FFN 4 x hidden, LM head tied to the "
        "word embedding (counted once); attention FLOPs counted dense. " + GEN,
        hidden, layers, heads, 2048, 51200)


def all_models():
    return [
        bert_large(512),
        bert_large(128),
        gpt("gpt2", "GPT-2 small (Hugging Face gpt2 / GPT2LMHeadModel): hidden 768, 12 layers, "
            "12 heads, FFN 3072, vocab 50257, context 1024; LM head tied to wte (counted once). "
            + GEN, 768, 12, 12, 1024),
        gpt("gpt2-xl", "GPT-2 XL (Hugging Face gpt2-xl / GPT2LMHeadModel): hidden 1600, 48 layers, "
            "25 heads, FFN 6400, vocab 50257, context 1024; LM head tied to wte (counted once). "
            + GEN, 1600, 48, 25, 1024),
    ] + [gpt3(*size) for size in GPT3_SIZES] + [llama3(*size) for size in LLAMA3_SIZES] + [
        mpt_named(*size) for size in MPT_SIZES] + [megatron_gpt(*size) for size in MEGATRON_GPT_SIZES]
