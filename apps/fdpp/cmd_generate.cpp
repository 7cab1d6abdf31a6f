// fdpp generate: text (or ids) in, streamed text out, then the speed.
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "gemm_cli.h"
#include "softmax_cli.h"
#include "fdpp/embedded_model.h"
#include "fdpp/engine.h"
#include "fdpp/input_file.h"
#include "fdpp/tokenizer.h"

namespace fdpp::cli {
namespace {

struct GenerateOptions {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  std::string prompt_file;
  int n_predict = 128;
  float temp = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  int64_t seed = -1;
  int ctx = 0;
  int parallel = 1;
  std::string device = "auto";
  std::string dtype;
  GemmCliOptions gemm;
  SoftmaxCliOptions softmax;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool no_bos = false;
  bool no_graphs = false;
  bool json = false;
};

int run_generate(GenerateOptions o) {
  // A prompt too long for the command line (the kernel's argument limit) comes from a file.
  if (!o.prompt_file.empty()) {
    if (!o.prompt.empty()) return fail("give the prompt text with -p or --prompt-file, not both");
    auto text = read_input_file(o.prompt_file);
    if (!text.ok()) return fail(text.status().with_context("--prompt-file"));
    if (text->empty()) return fail("--prompt-file " + o.prompt_file + " is empty");
    o.prompt = std::move(text).value();
  }
  if (o.prompt.empty() == o.prompt_ids.empty())
    return fail("give the prompt as text (-p) or as ids (--prompt-ids), exactly one of them");
  if (o.n_predict < 1) return fail("-n must be at least 1 (got " + std::to_string(o.n_predict) + ")");
  if (o.model.empty()) {  // no -m: the model built into the binary
    auto dir = materialize_embedded_model();
    if (!dir.ok()) return fail(dir.status());
    o.model = dir->string();
  }

  EngineOptions eo;
  eo.model_dir = o.model;
  eo.device = o.device == "auto" ? (cuda_available() ? "cuda" : "cpu") : o.device;
  eo.dtype = o.dtype;
  apply_gemm_options(o.gemm, &eo);
  apply_softmax_options(o.softmax, &eo);
  eo.context = o.ctx;
  eo.max_batch = o.parallel;
  eo.cuda_graphs = !o.no_graphs;
  auto engine_or = Engine::create(eo);
  if (!engine_or.ok()) return fail(engine_or.status());
  Engine& engine = **engine_or;
  const std::optional<TokenizerHandle> tok = engine.tokenizer_handle();

  std::vector<int> prompt;
  if (!o.prompt_ids.empty()) {
    auto ids = parse_id_list(o.prompt_ids);
    if (!ids.ok()) return fail(ids.status());
    prompt = std::move(ids).value();
  } else {
    if (!tok) return fail(o.model + " has no tokenizer: pass the prompt as ids with --prompt-ids");
    auto ids = tok->encode(o.prompt, !o.no_bos && tok->add_bos_by_default());
    if (!ids.ok()) return fail(ids.status());
    prompt = std::move(ids).value();
  }

  SamplingParams sp;
  sp.temperature = o.temp;
  sp.top_k = o.top_k;
  sp.top_p = o.top_p;
  sp.seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : std::random_device{}();
  sp.max_new_tokens = o.n_predict;
  sp.stop = o.stop;
  sp.ignore_eos = o.ignore_eos;
  std::vector<GenerationRequest> requests(o.parallel, GenerationRequest{prompt, sp});

  // One sequence streams as it goes; several are printed whole at the end.
  const bool stream = !o.json && o.parallel == 1;
  if (stream) {
    std::fputs(tok ? tok->decode(prompt).c_str() : "", stdout);
    std::fflush(stdout);
  }
  TokenCallback on_token = [&](int, int token, std::string_view text) {
    if (!stream) return;
    if (tok)
      std::fwrite(text.data(), 1, text.size(), stdout);
    else if (token >= 0)
      std::printf("%d ", token);
    std::fflush(stdout);
  };
  GenerationTiming timing;
  auto results = engine.generate(requests, on_token, &timing);
  if (!results.ok()) {
    if (stream) std::fputc('\n', stdout);
    return fail(results.status());
  }

  const double prefill_tps = timing.prefill_ms > 0 ? timing.prompt_tokens * 1e3 / timing.prefill_ms : 0;
  const double decode_tps = timing.decode_ms > 0 ? timing.decode_steps * o.parallel * 1e3 / timing.decode_ms : 0;
  if (o.json) {
    nlohmann::json j;
    j["model"] = o.model;
    j["device"] = eo.device;
    j["seed"] = sp.seed;
    j["prompt_ids"] = prompt;
    nlohmann::json outs = nlohmann::json::array();
    for (const auto& r : *results)
      outs.push_back({{"generated_ids", r.output_ids},
                      {"text", r.text},
                      {"finish_reason", finish_reason_name(r.finish)}});
    if (o.parallel == 1) {
      j.update(outs[0]);
    } else {
      j["results"] = outs;
    }
    if (auto sm = engine.softmax_stats(); sm.ok()) j["softmax"] = softmax_json(*sm);
    j["gemm"] = {{"policy", o.gemm.gemm}, {"table", engine.gemm_table_source()}};
    j["pdl"] = engine.pdl_active();
    j["fuse"] = o.gemm.fuse == "on";
    j["timing"] = {{"prompt_tokens", timing.prompt_tokens},     {"prefill_ms", timing.prefill_ms},
                   {"prefill_tokens_per_s", prefill_tps},       {"decode_steps", timing.decode_steps},
                   {"decode_ms", timing.decode_ms},             {"decode_tokens_per_s", decode_tps},
                   {"generated_tokens", timing.generated_tokens}};
    std::puts(j.dump(1).c_str());
    return 0;
  }
  if (!stream) {
    for (size_t i = 0; i < results->size(); ++i) {
      const auto& r = (*results)[i];
      std::printf("--- sequence %zu (%s)\n", i, finish_reason_name(r.finish));
      if (tok) {
        std::printf("%s%s\n", tok->decode(prompt).c_str(), r.text.c_str());
      } else {
        for (int id : r.output_ids) std::printf("%d ", id);
        std::printf("\n");
      }
    }
  } else {
    std::fputc('\n', stdout);
    std::fflush(stdout);  // the text ends before the speed line on a shared terminal
  }
  std::fprintf(stderr, "prompt: %lld tokens in %.1f ms (%.1f tokens/s) | generation: %lld steps in %.1f ms (%.1f tokens/s)\n",
               static_cast<long long>(timing.prompt_tokens), timing.prefill_ms, prefill_tps,
               static_cast<long long>(timing.decode_steps), timing.decode_ms, decode_tps);
  if (auto sm = engine.softmax_stats(); sm.ok() && (sm->prefill != "sync" || sm->decode != "sync"))
    std::fprintf(stderr, "%s\n", softmax_summary(*sm).c_str());
  return 0;
}

}  // namespace

void add_generate(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* sub = app.add_subcommand("generate", "generate text from a prompt");
  sub->add_option("-m,--model", o->model, "Hugging Face model folder (default: the embedded stories260K)");
  sub->add_option("-p,--prompt", o->prompt, "prompt text")->check(non_empty("prompt (-p)"));
  sub->add_option("--prompt-file", o->prompt_file, "prompt text from this file (- reads standard input)");
  sub->add_option("--prompt-ids", o->prompt_ids, "prompt as token ids: 1,2,3");
  sub->add_option("-n,--n-predict", o->n_predict, "tokens to generate")->capture_default_str();
  sub->add_option("--temp", o->temp, "temperature; 0 is greedy")->check(finite_number())->capture_default_str();
  sub->add_option("--top-k", o->top_k, "keep the k most likely tokens; 0 is off")->capture_default_str();
  sub->add_option("--top-p", o->top_p, "keep the smallest set with this probability mass; 1 is off")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "random seed; -1 picks one (printed with --json)")
      ->check(fits_int64())
      ->capture_default_str();
  sub->add_option("-c,--ctx", o->ctx, "context length (KV positions); 0 is the model's maximum")
      ->capture_default_str();
  sub->add_option("--parallel", o->parallel, "sequences generated together from the prompt (1..64)")
      ->capture_default_str();
  sub->add_option("--device", o->device, "cpu, cuda or auto")->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  sub->add_option("--dtype", o->dtype, "fp16 or bf16 on CUDA (default: the checkpoint's; f32 runs as fp16)");
  add_gemm_options(sub, o->gemm);
  add_softmax_options(sub, o->softmax);
  sub->add_option("--stop", o->stop, "stop before this string (repeatable)");
  sub->add_flag("--ignore-eos", o->ignore_eos, "keep generating past the end-of-sequence token");
  sub->add_flag("--no-bos", o->no_bos, "do not add the BOS token to a text prompt");
  sub->add_flag("--no-graphs", o->no_graphs, "run decode steps eagerly instead of replaying CUDA graphs");
  sub->add_flag("--json", o->json, "print prompt ids, generated ids, text and timing as JSON");
  sub->callback([o, &exit_code] { exit_code = run_generate(*o); });
}

}  // namespace fdpp::cli
