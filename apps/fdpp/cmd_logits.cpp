// fdpp logits: teacher-forced logits of given id sequences, dumped as float32
// for comparison with other implementations (scripts/compare/hf_compare.py).
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "gemm_cli.h"
#include "softmax_cli.h"
#include "fdpp/engine.h"
#include "fdpp/input_file.h"

namespace fdpp::cli {
namespace {

struct LogitsOptions {
  std::string model;
  std::string ids_file;
  std::string out;
  std::string mode = "prefill";
  std::string device = "auto";
  std::string dtype;
  GemmCliOptions gemm;
  SoftmaxCliOptions softmax;
  int ctx = 0;
};

int run_logits(const LogitsOptions& o) {
  auto text = read_input_file(o.ids_file);
  if (!text.ok()) return fail(text.status().with_context("--ids"));
  const auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  std::vector<std::vector<int>> seqs;
  if (!j.is_array() || j.empty()) return fail(o.ids_file + ": expected a JSON list of id lists");
  for (const auto& s : j) {
    if (!s.is_array()) return fail(o.ids_file + ": expected a JSON list of id lists");
    std::vector<int> ids;
    for (const auto& v : s) {
      auto id = json_token_id(v, o.ids_file);
      if (!id.ok()) return fail(id.status());
      ids.push_back(*id);
    }
    seqs.push_back(std::move(ids));
  }
  size_t longest = 0;
  for (const auto& s : seqs) longest = std::max(longest, s.size());

  EngineOptions eo;
  eo.model_dir = o.model;
  eo.device = o.device == "auto" ? (cuda_available() ? "cuda" : "cpu") : o.device;
  eo.dtype = o.dtype;
  apply_gemm_options(o.gemm, &eo);
  apply_softmax_options(o.softmax, &eo);
  eo.context = o.ctx > 0 ? o.ctx : static_cast<int>(longest);
  eo.max_batch = o.mode == "decode" ? static_cast<int>(seqs.size()) : 1;
  auto engine = Engine::create(eo);
  if (!engine.ok()) return fail(engine.status());

  std::vector<std::vector<float>> logits;
  if (o.mode == "decode") {
    auto r = (*engine)->teacher_forced_logits_decode(seqs);
    if (!r.ok()) return fail(r.status());
    logits = std::move(r).value();
  } else {
    for (const auto& s : seqs) {
      auto r = (*engine)->teacher_forced_logits(s);
      if (!r.ok()) return fail(r.status());
      logits.push_back(std::move(r).value());
    }
  }
  std::ofstream out(o.out, std::ios::binary | std::ios::trunc);
  for (const auto& l : logits) out.write(reinterpret_cast<const char*>(l.data()), l.size() * sizeof(float));
  if (!out) return fail("cannot write " + o.out);
  nlohmann::json lengths = nlohmann::json::array();
  for (const auto& s : seqs) lengths.push_back(s.size());
  std::puts(nlohmann::json{{"vocab", (*engine)->summary().vocab_size}, {"lengths", lengths},
                           {"mode", o.mode}, {"device", eo.device}, {"out", o.out}}
                .dump()
                .c_str());
  return 0;
}

}  // namespace

void add_logits(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* sub = app.add_subcommand("logits", "dump teacher-forced logits of id sequences (float32)");
  sub->add_option("-m,--model", o->model, "Hugging Face model folder")->required();
  sub->add_option("--ids", o->ids_file, "JSON file: a list of id lists (- reads standard input)")->required();
  sub->add_option("--out", o->out, "output: float32 (len_i, vocab) rows of each sequence in turn")->required();
  sub->add_option("--mode", o->mode, "prefill: each sequence as one prompt; decode: batched decode steps")
      ->check(CLI::IsMember({"prefill", "decode"}))
      ->capture_default_str();
  sub->add_option("--device", o->device, "cpu, cuda or auto")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  sub->add_option("--dtype", o->dtype, "fp16 or bf16 on CUDA");
  add_gemm_options(sub, o->gemm);
  add_softmax_options(sub, o->softmax);
  sub->add_option("-c,--ctx", o->ctx, "context; 0 is the longest sequence");
  sub->callback([o, &exit_code] { exit_code = run_logits(*o); });
}

}  // namespace fdpp::cli
