#include "common/tiny_models.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "common/safetensors_writer.h"
#include "common/test_util.h"
#include "core/half.h"

namespace fdpp::test {
namespace {

using Mat = std::vector<double>;  // row-major

// Collects tensors for the file and keeps their (dtype-rounded) values for the reference.
class Writer {
 public:
  Writer(std::string dtype, uint64_t seed) : dtype_(std::move(dtype)), seed_(seed) {}

  // Uniform values in [center - scale, center + scale).
  void add(const std::string& name, std::vector<int64_t> shape, float scale, float center = 0) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v = random_values(static_cast<size_t>(n), seed_ * 1000003 + count_++, scale);
    for (float& x : v) x = round(x + center);
    if (dtype_ == "F16")
      tensors_.push_back(f16_tensor(name, shape, v));
    else if (dtype_ == "BF16")
      tensors_.push_back(bf16_tensor(name, shape, v));
    else
      tensors_.push_back(f32_tensor(name, shape, v));
    values_[name] = std::move(v);
  }
  TensorMap finish(const std::filesystem::path& file) {
    write_safetensors(file, tensors_, {{"format", "pt"}});
    return std::move(values_);
  }

 private:
  float round(float x) const {
    if (dtype_ == "F16") return f16_to_f32(f32_to_f16(x));
    if (dtype_ == "BF16") return bf16_to_f32(f32_to_bf16(x));
    return x;
  }
  std::string dtype_;
  uint64_t seed_;
  uint64_t count_ = 0;
  std::vector<WriterTensor> tensors_;
  TensorMap values_;
};

const char* torch_dtype(const std::string& st) {
  return st == "F16" ? "float16" : st == "BF16" ? "bfloat16" : "float32";
}

// ---- double-precision building blocks -------------------------------------------

// y (T, N) = x (T, K) · W (N, K)ᵀ + b
Mat linear(const Mat& x, const std::vector<float>& w, const std::vector<float>* b, int64_t K,
           int64_t N) {
  const int64_t T = static_cast<int64_t>(x.size()) / K;
  Mat y(static_cast<size_t>(T * N));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      double s = b ? (*b)[n] : 0.0;
      for (int64_t k = 0; k < K; ++k) s += x[t * K + k] * static_cast<double>(w[n * K + k]);
      y[t * N + n] = s;
    }
  return y;
}

Mat layer_norm(const Mat& x, const std::vector<float>& w, const std::vector<float>& b, int64_t H,
               double eps) {
  Mat y(x.size());
  for (size_t r = 0; r < x.size() / H; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < H; ++i) mean += x[r * H + i];
    mean /= H;
    for (int64_t i = 0; i < H; ++i) var += (x[r * H + i] - mean) * (x[r * H + i] - mean);
    var /= H;
    for (int64_t i = 0; i < H; ++i)
      y[r * H + i] = (x[r * H + i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  }
  return y;
}

Mat rms_norm(const Mat& x, const std::vector<float>& w, int64_t H, double eps) {
  Mat y(x.size());
  for (size_t r = 0; r < x.size() / H; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < H; ++i) ss += x[r * H + i] * x[r * H + i];
    const double inv = 1.0 / std::sqrt(ss / H + eps);
    for (int64_t i = 0; i < H; ++i) y[r * H + i] = x[r * H + i] * inv * w[i];
  }
  return y;
}

// Causal attention of T tokens: q (T, nh, D), k/v (T, nkv, D); head h reads KV group
// h / (nh / nkv) (transformers' repeat_kv, ChatGLM's group expansion). Out (T, nh·D).
Mat attention(const Mat& q, const Mat& k, const Mat& v, int T, int nh, int nkv, int D) {
  Mat out(static_cast<size_t>(T) * nh * D, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < nh; ++h) {
      const int g = h / (nh / nkv);
      std::vector<double> s(t + 1);
      double m = -1e300;
      for (int j = 0; j <= t; ++j) {
        double d = 0;
        for (int e = 0; e < D; ++e)
          d += q[(static_cast<size_t>(t) * nh + h) * D + e] *
               k[(static_cast<size_t>(j) * nkv + g) * D + e];
        s[j] = d * scale;
        m = std::max(m, s[j]);
      }
      double den = 0;
      for (double& x : s) den += (x = std::exp(x - m));
      for (int j = 0; j <= t; ++j)
        for (int e = 0; e < D; ++e)
          out[(static_cast<size_t>(t) * nh + h) * D + e] +=
              s[j] / den * v[(static_cast<size_t>(j) * nkv + g) * D + e];
    }
  return out;
}

void add_to(Mat& x, const Mat& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

}  // namespace

TensorMap write_tiny_opt(const std::filesystem::path& dir, const TinyOpt& m) {
  const int H = m.hidden, F = m.ffn, V = m.vocab, E = m.proj_dim > 0 ? m.proj_dim : m.hidden;
  const std::string p = m.decoder_prefix ? "decoder." : "model.decoder.";
  Writer w(m.dtype, m.seed);
  const float sh = 1.0f / std::sqrt(static_cast<float>(H)),
              sf = 1.0f / std::sqrt(static_cast<float>(F));
  w.add(p + "embed_tokens.weight", {V, E}, 1.0f);
  w.add(p + "embed_positions.weight", {m.max_pos + 2, H}, 0.5f);
  if (E != H) {
    w.add(p + "project_in.weight", {H, E}, 1.0f / std::sqrt(static_cast<float>(E)));
    w.add(p + "project_out.weight", {E, H}, sh);
  }
  for (int l = 0; l < m.layers; ++l) {
    const std::string L = p + "layers." + std::to_string(l) + ".";
    for (const char* proj : {"k_proj", "v_proj", "q_proj", "out_proj"}) {
      w.add(L + "self_attn." + proj + ".weight", {H, H}, sh);
      w.add(L + "self_attn." + proj + ".bias", {H}, 0.2f);
    }
    w.add(L + "self_attn_layer_norm.weight", {H}, 0.2f, 1.0f);
    w.add(L + "self_attn_layer_norm.bias", {H}, 0.2f);
    w.add(L + "fc1.weight", {F, H}, sh);
    w.add(L + "fc1.bias", {F}, 0.2f);
    w.add(L + "fc2.weight", {H, F}, sf);
    w.add(L + "fc2.bias", {H}, 0.2f);
    w.add(L + "final_layer_norm.weight", {H}, 0.2f, 1.0f);
    w.add(L + "final_layer_norm.bias", {H}, 0.2f);
  }
  if (m.pre_norm) {
    w.add(p + "final_layer_norm.weight", {H}, 0.2f, 1.0f);
    w.add(p + "final_layer_norm.bias", {H}, 0.2f);
  }
  if (!m.tied) w.add("lm_head.weight", {V, E}, 1.0f);
  nlohmann::json cfg = {{"architectures", {"OPTForCausalLM"}},
                        {"model_type", "opt"},
                        {"hidden_size", H},
                        {"ffn_dim", F},
                        {"num_hidden_layers", m.layers},
                        {"num_attention_heads", m.heads},
                        {"vocab_size", V},
                        {"max_position_embeddings", m.max_pos},
                        {"do_layer_norm_before", m.pre_norm},
                        {"word_embed_proj_dim", E},
                        {"activation_function", m.act},
                        {"enable_bias", true},
                        {"layer_norm_elementwise_affine", true},
                        {"tie_word_embeddings", m.tied},
                        {"bos_token_id", 2},
                        {"eos_token_id", 2},
                        {"pad_token_id", 1},
                        {"torch_dtype", torch_dtype(m.dtype)}};
  write_file(dir / "config.json", cfg.dump(2));
  write_file(dir / "generation_config.json", R"({"bos_token_id": 2, "eos_token_id": 2})");
  return w.finish(dir / "model.safetensors");
}

TensorMap write_tiny_chatglm(const std::filesystem::path& dir, const TinyGlm& m) {
  const int H = m.hidden, F = m.ffn, V = m.vocab, D = m.kv_channels;
  const int qkv = (m.heads + 2 * m.kv_heads) * D;
  Writer w(m.dtype, m.seed);
  const float sh = 1.0f / std::sqrt(static_cast<float>(H));
  w.add("transformer.embedding.word_embeddings.weight", {V, H}, 1.0f);
  for (int l = 0; l < m.layers; ++l) {
    const std::string L = "transformer.encoder.layers." + std::to_string(l) + ".";
    w.add(L + "input_layernorm.weight", {H}, 0.2f, 1.0f);
    w.add(L + "self_attention.query_key_value.weight", {qkv, H}, sh);
    if (m.qkv_bias || m.linear_bias) w.add(L + "self_attention.query_key_value.bias", {qkv}, 0.2f);
    w.add(L + "self_attention.dense.weight", {H, m.heads * D},
          1.0f / std::sqrt(static_cast<float>(m.heads * D)));
    if (m.linear_bias) w.add(L + "self_attention.dense.bias", {H}, 0.2f);
    w.add(L + "post_attention_layernorm.weight", {H}, 0.2f, 1.0f);
    w.add(L + "mlp.dense_h_to_4h.weight", {2 * F, H}, sh);
    if (m.linear_bias) w.add(L + "mlp.dense_h_to_4h.bias", {2 * F}, 0.2f);
    w.add(L + "mlp.dense_4h_to_h.weight", {H, F}, 1.0f / std::sqrt(static_cast<float>(F)));
    if (m.linear_bias) w.add(L + "mlp.dense_4h_to_h.bias", {H}, 0.2f);
  }
  if (m.post_layer_norm) w.add("transformer.encoder.final_layernorm.weight", {H}, 0.2f, 1.0f);
  w.add("transformer.output_layer.weight", {V, H}, 1.0f);
  // Real checkpoints carry the RoPE table as a buffer; fdpp must ignore it.
  w.add("transformer.rotary_pos_emb.inv_freq", {D / 4}, 1.0f);
  nlohmann::json cfg = {{"architectures", {"ChatGLMModel"}},
                        {"model_type", "chatglm"},
                        {"add_bias_linear", m.linear_bias},
                        {"add_qkv_bias", m.qkv_bias},
                        {"apply_query_key_layer_scaling", true},
                        {"apply_residual_connection_post_layernorm", false},
                        {"attention_softmax_in_fp32", true},
                        {"ffn_hidden_size", F},
                        {"hidden_size", H},
                        {"kv_channels", D},
                        {"layernorm_epsilon", 1e-5},
                        {"multi_query_attention", true},
                        {"multi_query_group_num", m.kv_heads},
                        {"num_attention_heads", m.heads},
                        {"num_layers", m.layers},
                        {"original_rope", true},
                        {"padded_vocab_size", V},
                        {"post_layer_norm", m.post_layer_norm},
                        {"rmsnorm", true},
                        {"seq_length", m.seq_length},
                        {"tie_word_embeddings", false},
                        {"eos_token_id", 2},
                        {"pad_token_id", 0},
                        {"torch_dtype", torch_dtype(m.dtype)}};
  if (m.rope_ratio != 1.0) cfg["rope_ratio"] = m.rope_ratio;
  write_file(dir / "config.json", cfg.dump(2));
  write_file(dir / "generation_config.json", R"({"eos_token_id": 2, "pad_token_id": 0})");
  return w.finish(dir / "model.safetensors");
}

// transformers' OPTDecoder (eval): see the header.
std::vector<double> opt_reference_logits(const TinyOpt& m, const TensorMap& w,
                                         const std::vector<int>& ids) {
  const int H = m.hidden, F = m.ffn, V = m.vocab, E = m.proj_dim > 0 ? m.proj_dim : m.hidden;
  const int T = static_cast<int>(ids.size()), D = H / m.heads;
  const std::string p = m.decoder_prefix ? "decoder." : "model.decoder.";
  const double eps = 1e-5;
  auto W = [&](const std::string& n) -> const std::vector<float>& { return w.at(p + n); };

  Mat x(static_cast<size_t>(T) * E);
  for (int t = 0; t < T; ++t)
    for (int e = 0; e < E; ++e) x[t * E + e] = W("embed_tokens.weight")[ids[t] * E + e];
  if (E != H) x = linear(x, W("project_in.weight"), nullptr, E, H);
  for (int t = 0; t < T; ++t)  // OPTLearnedPositionalEmbedding: row position + 2
    for (int i = 0; i < H; ++i) x[t * H + i] += W("embed_positions.weight")[(t + 2) * H + i];

  for (int l = 0; l < m.layers; ++l) {
    const std::string L = "layers." + std::to_string(l) + ".";
    auto P = [&](const std::string& n) -> const std::vector<float>& { return W(L + n); };
    Mat h = m.pre_norm ? layer_norm(x, P("self_attn_layer_norm.weight"),
                                    P("self_attn_layer_norm.bias"), H, eps)
                       : x;
    const Mat q = linear(h, P("self_attn.q_proj.weight"), &P("self_attn.q_proj.bias"), H, H);
    const Mat k = linear(h, P("self_attn.k_proj.weight"), &P("self_attn.k_proj.bias"), H, H);
    const Mat v = linear(h, P("self_attn.v_proj.weight"), &P("self_attn.v_proj.bias"), H, H);
    const Mat o = attention(q, k, v, T, m.heads, m.heads, D);
    add_to(x, linear(o, P("self_attn.out_proj.weight"), &P("self_attn.out_proj.bias"), H, H));
    if (!m.pre_norm)
      x = layer_norm(x, P("self_attn_layer_norm.weight"), P("self_attn_layer_norm.bias"), H, eps);

    h = m.pre_norm ? layer_norm(x, P("final_layer_norm.weight"), P("final_layer_norm.bias"), H, eps)
                   : x;
    Mat f = linear(h, P("fc1.weight"), &P("fc1.bias"), H, F);
    for (double& a : f)
      a = m.act == "gelu" ? 0.5 * a * (1 + std::erf(a / std::sqrt(2.0))) : std::max(a, 0.0);
    add_to(x, linear(f, P("fc2.weight"), &P("fc2.bias"), F, H));
    if (!m.pre_norm)
      x = layer_norm(x, P("final_layer_norm.weight"), P("final_layer_norm.bias"), H, eps);
  }
  if (m.pre_norm)
    x = layer_norm(x, W("final_layer_norm.weight"), W("final_layer_norm.bias"), H, eps);
  if (E != H) x = linear(x, W("project_out.weight"), nullptr, H, E);
  return linear(x, m.tied ? W("embed_tokens.weight") : w.at("lm_head.weight"), nullptr, E, V);
}

// THUDM modeling_chatglm.py (ChatGLM2), eval.
std::vector<double> chatglm_reference_logits(const TinyGlm& m, const TensorMap& w,
                                             const std::vector<int>& ids) {
  const int H = m.hidden, F = m.ffn, V = m.vocab, D = m.kv_channels;
  const int T = static_cast<int>(ids.size()), nh = m.heads, ng = m.kv_heads;
  const int qkv_dim = (nh + 2 * ng) * D;
  const double eps = 1e-5;
  // RotaryEmbedding(kv_channels // 2): base 10000·rope_ratio over dim = D/2, i.e. D/4
  // frequencies, each turning the adjacent pair (2i, 2i+1) of the first D/2 dims.
  const int rot = D / 2;
  const double base = 10000.0 * m.rope_ratio;
  auto rope = [&](Mat& x, int heads) {  // x (T, heads, D)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < rot / 2; ++i) {
          const double theta = t / std::pow(base, 2.0 * i / rot);
          double* e = &x[(static_cast<size_t>(t) * heads + h) * D + 2 * i];
          const double x0 = e[0], x1 = e[1];
          e[0] = x0 * std::cos(theta) - x1 * std::sin(theta);
          e[1] = x1 * std::cos(theta) + x0 * std::sin(theta);
        }
  };
  Mat x(static_cast<size_t>(T) * H);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < H; ++i)
      x[t * H + i] = w.at("transformer.embedding.word_embeddings.weight")[ids[t] * H + i];
  for (int l = 0; l < m.layers; ++l) {
    const std::string L = "transformer.encoder.layers." + std::to_string(l) + ".";
    auto P = [&](const std::string& n) -> const std::vector<float>& { return w.at(L + n); };
    auto bias = [&](const std::string& n) { return w.count(L + n) ? &w.at(L + n) : nullptr; };
    Mat h = rms_norm(x, P("input_layernorm.weight"), H, eps);
    const Mat qkv = linear(h, P("self_attention.query_key_value.weight"),
                           bias("self_attention.query_key_value.bias"), H, qkv_dim);
    Mat q(static_cast<size_t>(T) * nh * D), k(static_cast<size_t>(T) * ng * D), v(k.size());
    for (int t = 0; t < T; ++t) {  // split [q heads | k groups | v groups]
      const double* row = &qkv[static_cast<size_t>(t) * qkv_dim];
      std::copy(row, row + nh * D, &q[static_cast<size_t>(t) * nh * D]);
      std::copy(row + nh * D, row + (nh + ng) * D, &k[static_cast<size_t>(t) * ng * D]);
      std::copy(row + (nh + ng) * D, row + (nh + 2 * ng) * D, &v[static_cast<size_t>(t) * ng * D]);
    }
    rope(q, nh);
    rope(k, ng);
    const Mat o = attention(q, k, v, T, nh, ng, D);
    add_to(x, linear(o, P("self_attention.dense.weight"), bias("self_attention.dense.bias"), nh * D,
                     H));
    h = rms_norm(x, P("post_attention_layernorm.weight"), H, eps);
    const Mat ab =
        linear(h, P("mlp.dense_h_to_4h.weight"), bias("mlp.dense_h_to_4h.bias"), H, 2 * F);
    Mat f(static_cast<size_t>(T) * F);
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < F; ++i) {  // swiglu: chunk(2) -> silu(x0) * x1
        const double a = ab[static_cast<size_t>(t) * 2 * F + i],
                     b = ab[static_cast<size_t>(t) * 2 * F + F + i];
        f[static_cast<size_t>(t) * F + i] = a / (1 + std::exp(-a)) * b;
      }
    add_to(x, linear(f, P("mlp.dense_4h_to_h.weight"), bias("mlp.dense_4h_to_h.bias"), F, H));
  }
  if (m.post_layer_norm)
    x = rms_norm(x, w.at("transformer.encoder.final_layernorm.weight"), H, eps);
  return linear(x, w.at("transformer.output_layer.weight"), nullptr, H, V);
}

}  // namespace fdpp::test
