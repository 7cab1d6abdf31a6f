#include "model/config.h"

#include <cmath>
#include <limits>
#include <system_error>

#include "core/text_file.h"
#include "model/config_readers.h"
#include "model/families/registry.h"

namespace fdpp {

namespace {

using namespace config_json;

// Token ids in config.json / generation_config.json: an int, a list of ints, or null.
Status read_token_ids(const json& obj, const char* key, const std::string& field,
                      std::vector<int>* out, bool* present) {
  *present = false;
  const json* v = find(obj, key);
  if (!v) return Status::Ok();
  std::vector<int> ids;
  auto take = [&](const json& x) -> Status {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 ||
        x.get<int64_t>() > std::numeric_limits<int>::max()) {
      return InvalidArgument("field '" + field + "' must be a non-negative token id or a list of "
                             "them, got " + v->dump());
    }
    ids.push_back(static_cast<int>(x.get<int64_t>()));
    return Status::Ok();
  };
  if (v->is_array()) {
    for (const json& x : *v) FDPP_RETURN_IF_ERROR(take(x));
  } else {
    FDPP_RETURN_IF_ERROR(take(*v));
  }
  *out = std::move(ids);
  *present = true;
  return Status::Ok();
}

Status read_special_tokens(const json& j, const std::string& file, ModelConfig* cfg) {
  std::vector<int> ids;
  bool present = false;
  FDPP_RETURN_IF_ERROR(read_token_ids(j, "bos_token_id", file + "bos_token_id", &ids, &present));
  if (present) {
    if (ids.size() != 1) {
      return InvalidArgument("field '" + file + "bos_token_id' must be a single token id");
    }
    cfg->bos_token_id = ids[0];
  }
  FDPP_RETURN_IF_ERROR(read_token_ids(j, "eos_token_id", file + "eos_token_id", &ids, &present));
  if (present) cfg->eos_token_ids = ids;
  return Status::Ok();
}

}  // namespace

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::kLlama: return "llama";
    case Architecture::kOpt: return "opt";
    case Architecture::kChatGlm: return "chatglm";
  }
  return "?";
}

Result<ModelConfig> parse_model_config(const std::string& config_json,
                                       const std::string* generation_config_json) {
  FDPP_ASSIGN_OR_RETURN(json j, parse_json_object(config_json, "config.json"));
  ModelConfig cfg;
  {
    const json* mt = find(j, "model_type");
    if (!mt) return InvalidArgument("missing required field 'model_type'");
    if (!mt->is_string()) {
      return InvalidArgument("field 'model_type' must be a string, got " + type_of(*mt));
    }
    cfg.model_type = mt->get<std::string>();
  }
  const ModelFamily* family = find_model_family(cfg.model_type);
  if (!family) {
    std::string names;
    for (const ModelFamily& f : model_families())
      names += (names.empty() ? "" : ", ") + std::string(f.model_type);
    return Unsupported("model_type '" + cfg.model_type + "' is not supported (fdpp supports: " +
                       names + ")");
  }
  cfg.arch = family->arch;
  FDPP_RETURN_IF_ERROR(family->parse(j, &cfg));

  FDPP_RETURN_IF_ERROR(read_special_tokens(j, "", &cfg));
  if (generation_config_json) {
    FDPP_ASSIGN_OR_RETURN(json g,
                          parse_json_object(*generation_config_json, "generation_config.json"));
    FDPP_RETURN_IF_ERROR(read_special_tokens(g, "generation_config.json:", &cfg));
  }
  // An id past the vocabulary would index beyond the embedding and the LM head.
  if (cfg.bos_token_id >= cfg.vocab_size) {
    return InvalidArgument("field 'bos_token_id' (" + std::to_string(cfg.bos_token_id) +
                           ") is not below vocab_size (" + std::to_string(cfg.vocab_size) + ")");
  }
  for (int id : cfg.eos_token_ids) {
    if (id >= cfg.vocab_size) {
      return InvalidArgument("field 'eos_token_id' (" + std::to_string(id) +
                             ") is not below vocab_size (" + std::to_string(cfg.vocab_size) + ")");
    }
  }
  return cfg;
}

Result<ModelConfig> load_model_config(const std::filesystem::path& dir) {
  const auto config_path = dir / "config.json";
  auto config = read_text_file(config_path);
  if (!config.ok()) return config.status();

  const auto gen_path = dir / "generation_config.json";
  std::error_code ec;
  std::optional<std::string> gen;
  if (std::filesystem::exists(gen_path, ec)) {
    auto g = read_text_file(gen_path);
    if (!g.ok()) return g.status();
    gen = std::move(g).value();
  }
  auto cfg = parse_model_config(config.value(), gen ? &*gen : nullptr);
  if (!cfg.ok()) return cfg.status().with_context(dir.string());
  return cfg;
}

std::vector<float> rope_inv_freq(const ModelConfig& cfg) {
  const RopeConfig& r = cfg.rope;
  const int dim = cfg.rotary_dim();
  std::vector<float> out(dim > 0 ? dim / 2 : 0);
  const double kPi = 3.14159265358979323846;
  for (int i = 0; i < static_cast<int>(out.size()); ++i) {
    double f = 1.0 / std::pow(static_cast<double>(r.theta), 2.0 * i / dim);
    if (r.type == "linear") {
      f /= r.factor;
    } else if (r.type == "llama3") {
      // transformers _compute_llama3_parameters: frequencies whose wavelength is
      // shorter than the original context / high_freq_factor are kept, longer than
      // context / low_freq_factor are divided by factor, and the band between is
      // a linear blend in (context / wavelength).
      const double ctx = r.original_max_position_embeddings;
      const double low_wavelen = ctx / r.low_freq_factor;
      const double high_wavelen = ctx / r.high_freq_factor;
      const double wavelen = 2.0 * kPi / f;
      if (wavelen > low_wavelen) {
        f /= r.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = (1.0 - smooth) * f / r.factor + smooth * f;
      }
    }
    out[i] = static_cast<float>(f);
  }
  return out;
}

}  // namespace fdpp
