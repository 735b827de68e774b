/* test_spm.c — SentencePiece tokenizers (rn_spm.h, `tokenizer = spm:FILE`):
 * `ramtrace tokenizer train`, exact round trips of the kernel-style
 * fixture, ids equal to spm_encode's on 10,000 lines, the .model found
 * beside the model file from any directory, bad tokenizer files, and
 * bits per byte against an independent computation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "kfix.h"
#include "an_patch.h"
#include "rn_modelfile.h"
#include "rn_runtime.h"
#include "rn_spm.h"
#include "rn_tasks.h"
#include "rn_tokenizer.h"
#include "rn_train_loop.h"

#define FIXTURE "tests/data/kernel-style.c"

static char g_tok[512], g_model[512];

/* A tokenizer trained on the fixture and the first 3 MB of the KJV
 * (data/kjv.txt, written by scripts/setup), and a model using it. */
static int setup(void)
{
    char kjv[512];
    snprintf(g_tok, sizeof g_tok, "%s", th_path("spm_tok.model"));
    snprintf(g_model, sizeof g_model, "%s", th_path("spm_dir/lm.bin"));
    snprintf(kjv, sizeof kjv, "%s", th_path("spm_kjv3m.txt"));
    if (th_run("head -c 3000000 data/kjv.txt > %s && mkdir -p %s", kjv, th_path("spm_dir"))) return -1;
    if (th_run("%s -q tokenizer train --vocab 1000 %s %s -o %s", th_bin(), FIXTURE, kjv, g_tok)) return -1;
    if (th_run("%s -q init --config samples/configs/tiny.cfg --tokenizer spm:%s --vocab-size 1000 --seed 7 -o %s",
               th_bin(), g_tok, g_model)) return -1;
    return 0;
}
TH_SUITE(spm, setup, NULL);

#define assert_one_line_error kfix_one_line_error

/* A config with the suite's tokenizer (tokenizer = spm:g_tok, V = 1000). */
static void spm_config(rn_config *c) { kfix_spm_config(c, g_tok, 1000); }

TH_TEST(test_spm_round_trip, "the fixture's tokens decode to its exact bytes")
{
    rn_config c;
    spm_config(&c);
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_config_validate(&c, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_tokenizer_check(&c, &err), RN_OK);
    size_t len;
    char *text = th_read_file(FIXTURE, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    int *ids, n;
    CU_ASSERT_EQUAL_FATAL(rn_tokenize(&c, text, len, FIXTURE, &ids, &n, &err), RN_OK);
    const rn_spm *s;
    CU_ASSERT_EQUAL_FATAL(rn_spm_get(g_tok, &s, &err), RN_OK);
    CU_ASSERT_EQUAL(ids[0], rn_spm_bos(s));
    CU_ASSERT(n > 1 && (size_t)n < len); /* pieces, not bytes */
    /* the printed continuation of every token after BOS is the text */
    char *out = NULL;
    size_t out_len = 0, nbytes = 0;
    FILE *f = open_memstream(&out, &out_len);
    for (int i = 0; i < n; i++) {
        CU_ASSERT(ids[i] >= 0 && ids[i] < rn_spm_vocab(s));
        rn_token_print(&c, ids[i], i == 0, f);
        nbytes += rn_token_nbytes(&c, ids[i]);
    }
    fclose(f);
    CU_ASSERT_EQUAL(out_len, len);
    CU_ASSERT_EQUAL(nbytes, len);
    CU_ASSERT(out_len == len && !memcmp(out, text, len));
    /* trace pieces: escaped, BOS by name */
    char piece[64];
    rn_token_piece(&c, ids[0], piece, sizeof piece);
    CU_ASSERT_STRING_EQUAL(piece, "<s>");
    int nl = -1;
    for (int i = 1; i < n && nl < 0; i++) {
        size_t bl;
        const char *b = rn_spm_token_bytes(s, ids[i], &bl);
        if (bl == 1 && b[0] == '\n') nl = ids[i];
    }
    CU_ASSERT(nl >= 0); /* a newline is a byte token: lines are what spm trains on */
    rn_token_piece(&c, nl, piece, sizeof piece);
    CU_ASSERT_STRING_EQUAL(piece, "\\n");
    free(out);
    free(ids);
    free(text);
}

TH_TEST(test_spm_matches_spm_encode, "ids equal spm_encode --output_format=id on 10,000 lines")
{
    char lines[512], ours[512], theirs[512];
    snprintf(lines, sizeof lines, "%s", th_path("spm_lines.txt"));
    snprintf(ours, sizeof ours, "%s", th_path("spm_ours.txt"));
    snprintf(theirs, sizeof theirs, "%s", th_path("spm_theirs.txt"));
    /* the fixture's lines, then KJV verses from line 20,001 on, to 10,000 lines */
    CU_ASSERT_EQUAL_FATAL(th_run("{ cat %s; tail -n +20001 data/kjv.txt | head -n $((10000 - $(wc -l < %s))); } > %s",
                                 FIXTURE, FIXTURE, lines), 0);
    CU_ASSERT_EQUAL(th_run("wc -l < %s", lines), 0);
    CU_ASSERT_EQUAL(atoi(th_out()), 10000);
    CU_ASSERT_EQUAL(th_run("%s tokenizer encode %s %s > %s", th_bin(), g_tok, lines, ours), 0);
    CU_ASSERT_EQUAL(th_run("spm_encode --model=%s --output_format=id < %s > %s", g_tok, lines, theirs), 0);
    CU_ASSERT_EQUAL(th_run("wc -l < %s", ours), 0);
    CU_ASSERT_EQUAL(atoi(th_out()), 10000);
    CU_ASSERT(th_files_equal(ours, theirs));
}

TH_TEST(test_spm_beside_model, "the model finds its tokenizer beside it from any directory")
{
    /* init copied the .model beside the model */
    CU_ASSERT(th_file_exists(th_path("spm_dir/spm_tok.model")));
    CU_ASSERT(th_files_equal(th_path("spm_dir/spm_tok.model"), g_tok));
    char prompt[512];
    snprintf(prompt, sizeof prompt, "%s", th_path("spm_prompt.txt"));
    th_write_file(prompt, "static int rb_init(void)\n{", 26);
    CU_ASSERT_EQUAL(th_run("cd / && %s run %s %s -n 16 --seed 2 --threads 1", th_bin(), g_model, prompt), 0);
    char first[4096];
    snprintf(first, sizeof first, "%s", th_out());
    CU_ASSERT(strlen(first) > 0);
    CU_ASSERT_EQUAL(th_run("cd %s && %s run lm.bin %s -n 16 --seed 2 --threads 1", th_path("spm_dir"), th_bin(), prompt), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), first);
    /* safetensors: the same, and the name only in its metadata */
    CU_ASSERT_EQUAL(th_run("mkdir -p %s && %s convert %s %s", th_path("spm_st"), th_bin(), g_model,
                           th_path("spm_st/lm.safetensors")), 0);
    CU_ASSERT(th_files_equal(th_path("spm_st/spm_tok.model"), g_tok));
    CU_ASSERT_EQUAL(th_run("grep -c '\"ramnet.tokenizer\":\"spm:spm_tok.model\"' %s", th_path("spm_st/lm.safetensors")), 0);
    CU_ASSERT_EQUAL(th_run("cd / && %s run %s %s -n 16 --seed 2 --threads 1", th_bin(),
                           th_path("spm_st/lm.safetensors"), prompt), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), first);
    /* a trace records the pieces */
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s", th_bin(), g_model, prompt, th_path("spm_trace.db")), 0);
    CU_ASSERT(th_sql_int(th_path("spm_trace.db"), "SELECT count(*) FROM tokens") > 2);
    CU_ASSERT_EQUAL(th_sql_int(th_path("spm_trace.db"), "SELECT count(*) FROM tokens WHERE pos = 0 AND piece = '<s>'"), 1);
    CU_ASSERT_EQUAL(th_sql_int(th_path("spm_trace.db"), "SELECT count(*) FROM tokens WHERE piece = '\\n'"), 1);
}

TH_TEST(test_spm_bad_files, "a bad or missing tokenizer: one line, exit 2, nothing written")
{
    char bad[512];
    snprintf(bad, sizeof bad, "%s", th_path("spm_bad.model"));
    th_write_file(bad, "not a model\n", 12);
    CU_ASSERT_EQUAL(th_run("%s init --config samples/configs/tiny.cfg --tokenizer spm:%s --vocab-size 1000 -o %s",
                           th_bin(), bad, th_path("spm_bad_dir.bin")), 2);
    assert_one_line_error("spm_bad.model: not a SentencePiece model");
    CU_ASSERT(!th_file_exists(th_path("spm_bad_dir.bin")));
    CU_ASSERT_EQUAL(th_run("%s tokenizer encode %s %s", th_bin(), bad, FIXTURE), 2);
    assert_one_line_error("not a SentencePiece model");
    CU_ASSERT_EQUAL(th_run("%s init --config samples/configs/tiny.cfg --tokenizer spm:%s -o %s", th_bin(),
                           th_path("spm_missing.model"), th_path("spm_bad_dir.bin")), 2);
    assert_one_line_error("spm_missing.model");
    /* the vocabulary must cover the tokenizer's pieces */
    CU_ASSERT_EQUAL(th_run("%s init --config samples/configs/tiny.cfg --tokenizer spm:%s --vocab-size 500 -o %s",
                           th_bin(), g_tok, th_path("spm_bad_dir.bin")), 2);
    assert_one_line_error("smaller than the 1000 pieces");
    CU_ASSERT(!th_file_exists(th_path("spm_bad_dir.bin")));
    /* a model whose tokenizer beside it was replaced or removed */
    CU_ASSERT_EQUAL(th_run("mkdir -p %s && cp %s %s/ && cp %s/spm_tok.model %s/", th_path("spm_moved"), g_model,
                           th_path("spm_moved"), th_path("spm_dir"), th_path("spm_moved")), 0);
    CU_ASSERT_EQUAL(th_run("%s -q tokenizer train --vocab 500 %s -o %s/spm_tok.model", th_bin(), FIXTURE,
                           th_path("spm_moved")), 0);
    CU_ASSERT_EQUAL(th_run("%s info %s", th_bin(), th_path("spm_moved/lm.bin")), 2);
    assert_one_line_error("is not the one it was saved with");
    CU_ASSERT_EQUAL(th_run("rm %s/spm_tok.model && %s info %s", th_path("spm_moved"), th_bin(), th_path("spm_moved/lm.bin")), 2);
    assert_one_line_error("spm_moved/spm_tok.model");
    /* saving beside a different tokenizer of the same name is refused */
    CU_ASSERT_EQUAL(th_run("%s -q tokenizer train --vocab 500 %s -o %s/spm_tok.model && %s convert %s %s/lm2.bin",
                           th_bin(), FIXTURE, th_path("spm_moved"), th_bin(), g_model, th_path("spm_moved")), 2);
    assert_one_line_error("another file is already there");
    CU_ASSERT(!th_file_exists(th_path("spm_moved/lm2.bin")));
    /* tokenizer train's own errors */
    CU_ASSERT_EQUAL(th_run("%s tokenizer train --vocab 1000 %s", th_bin(), FIXTURE), 2);
    assert_one_line_error("-o FILE.model");
    CU_ASSERT_EQUAL(th_run("%s tokenizer train --vocab 1000 %s -o %s", th_bin(), th_path("spm_none.txt"),
                           th_path("spm_x.model")), 2);
    assert_one_line_error("spm_none.txt");
    CU_ASSERT(!th_file_exists(th_path("spm_x.model")));
}

/* Summed loss over every window of T tokens of the whole file, by the
 * inference runtime (not the trainer's evaluator): the log-softmax of each
 * row in double. */
static double runtime_nats(const rn_model *m, const rn_text *t, int T)
{
    rn_error err;
    rn_runtime *rt = NULL;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(m, T, &rt, &err), RN_OK);
    int V = m->cfg.vocab_size;
    float *lg = malloc(sizeof(float) * (size_t)T * V);
    int *tok = malloc(sizeof(int) * 2 * (size_t)T);
    double nats = 0;
    for (int64_t w = 0; w < rn_text_n_val(t, T); w++) {
        rn_text_val_window(t, w, T, tok, tok + T);
        rn_runtime_reset(rt);
        CU_ASSERT_EQUAL_FATAL(rn_prefill(rt, tok, T, lg, 1, &err), RN_OK);
        for (int i = 0; i < T; i++) {
            const float *r = lg + (size_t)i * V;
            double mx = r[0], z = 0;
            for (int v = 1; v < V; v++) if (r[v] > mx) mx = r[v];
            for (int v = 0; v < V; v++) z += exp((double)r[v] - mx);
            nats += mx + log(z) - (double)r[tok[T + i]];
        }
    }
    free(lg);
    free(tok);
    rn_runtime_free(rt);
    return nats;
}

TH_TEST(test_spm_bits_per_byte, "eval's bits per byte = runtime nats / ln 2 / the scored bytes")
{
    const int T = 32;
    rn_model m;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_load(&m, g_model, &err), RN_OK);
    rn_text t;
    CU_ASSERT_EQUAL_FATAL(rn_text_load_for(&t, &m.cfg, FIXTURE, 1.0, T, &err), RN_OK);
    CU_ASSERT_PTR_NULL(t.data);
    CU_ASSERT_EQUAL(t.n_train, 0);
    int64_t nw = rn_text_n_val(&t, T);
    CU_ASSERT(nw >= 2);
    /* the scored targets are tokens 1 .. nw·T; their bytes are the file's
     * minus what the unscored tail stands for (BOS stands for none) */
    size_t flen;
    char *text = th_read_file(FIXTURE, &flen);
    const rn_spm *s;
    CU_ASSERT_EQUAL_FATAL(rn_spm_get(m.cfg.tok_file, &s, &err), RN_OK);
    int64_t bytes = (int64_t)flen;
    for (int64_t i = nw * T + 1; i < t.n; i++) {
        size_t bl;
        rn_spm_token_bytes(s, rn_text_at(&t, i), &bl);
        bytes -= (int64_t)bl;
    }
    double want_bpb = runtime_nats(&m, &t, T) / log(2.0) / (double)bytes;
    double loss, bpb;
    CU_ASSERT_EQUAL_FATAL(rn_eval_text(&m, RN_DEVICE_CPU, &t, T, 0, 4, &loss, &bpb, NULL, &err), RN_OK);
    CU_ASSERT(fabs(bpb - want_bpb) <= 1e-4 * want_bpb);
    if (!(fabs(bpb - want_bpb) <= 1e-4 * want_bpb)) fprintf(stderr, "\nbpb %.9g, runtime %.9g\n", bpb, want_bpb);
    /* per token and per byte differ by the bytes per token */
    CU_ASSERT(fabs(loss * (double)(nw * T) - bpb * log(2.0) * (double)bytes) <= 1e-6 * loss * (double)(nw * T));
    /* the CLI prints the same (--whole: all of the file) */
    CU_ASSERT_EQUAL(th_run("%s eval %s --task text --data %s --whole --seq-len %d -f csv --threads 1", th_bin(),
                           g_model, FIXTURE, T), 0);
    double a, b, c;
    CU_ASSERT_EQUAL(sscanf(strchr(th_out(), '\n') + 1, "%lf,%lf,%lf", &a, &b, &c), 3);
    CU_ASSERT(fabs(b - bpb) <= 1e-9 * bpb);
    CU_ASSERT(fabs(a - bpb * log(2.0)) <= 1e-9 * a);
    CU_ASSERT(fabs(c - loss) <= 1e-9 * c);
    rn_text_free(&t);
    free(text);
    rn_model_free(&m);
}

TH_TEST(test_bytes_bits_per_byte, "bytes tokenizer: bits per byte = loss / ln 2")
{
    CU_ASSERT_EQUAL_FATAL(th_run("%s -q init --config samples/configs/tiny.cfg --seed 3 -o %s", th_bin(),
                                 th_path("spm_bytes.bin")), 0);
    CU_ASSERT_EQUAL(th_run("%s eval %s --task text --data %s --whole --seq-len 64 -f csv --threads 1", th_bin(),
                           th_path("spm_bytes.bin"), FIXTURE), 0);
    double a, b, c;
    CU_ASSERT_EQUAL(sscanf(strchr(th_out(), '\n') + 1, "%lf,%lf,%lf", &a, &b, &c), 3);
    CU_ASSERT_EQUAL(a, c);
    CU_ASSERT(fabs(b - a / log(2.0)) <= 1e-12 * b);
    /* a window longer than the whole file: one line naming it, exit 2 */
    CU_ASSERT_EQUAL(th_run("%s eval %s --task text --data %s --whole --seq-len 100000 --threads 1", th_bin(),
                           th_path("spm_bytes.bin"), FIXTURE), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "is shorter than one sequence of 100001 bytes"));
    CU_ASSERT_PTR_NULL(strstr(th_err(), "need about"));
}

TH_TEST(test_spm_train_text, "train --task text on SentencePiece tokens")
{
    CU_ASSERT_EQUAL(th_run("cd %s && %s -q train --task text --config %s/samples/configs/tiny.cfg --set tokenizer=spm:spm_tok.model "
                           "--set vocab_size=1000 --data %s/%s --seq-len 32 --batch 2 --steps 2 --threads 1 -o spm_dir/tr.bin",
                           th_tmpdir(), th_bin(), getenv("PWD") ? getenv("PWD") : ".", getenv("PWD") ? getenv("PWD") : ".",
                           FIXTURE), 0);
    CU_ASSERT(th_file_exists(th_path("spm_dir/tr.bin")));
    CU_ASSERT_EQUAL(th_run("%s info %s", th_bin(), th_path("spm_dir/tr.bin")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "spm_dir/spm_tok.model"));
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "format            model.bin v2\n"));
}

TH_TEST(test_spm_token_names, "a token named on the command line: the piece as traces show it")
{
    rn_config c;
    spm_config(&c);
    rn_error err;
    int id;
    char piece[256];
    rn_token_piece(&c, 300, piece, sizeof piece); /* a learned piece (ids 3..258 are the bytes) */
    CU_ASSERT_EQUAL(an_token_parse(&c, "--target", piece, &id, &err), RN_OK);
    char back[256];
    rn_token_piece(&c, id, back, sizeof back);
    CU_ASSERT_STRING_EQUAL(back, piece);
    CU_ASSERT(id >= 259);
    CU_ASSERT_EQUAL(an_token_parse(&c, "--target", "\\n", &id, &err), RN_OK); /* only a byte token shows \n */
    CU_ASSERT_EQUAL(rn_token_nbytes(&c, id), 1);
    CU_ASSERT_EQUAL(an_token_parse(&c, "--target", "<s>", &id, &err), RN_OK);
    CU_ASSERT_EQUAL(id, 1);
    CU_ASSERT_EQUAL(an_token_parse(&c, "--target", "#42", &id, &err), RN_OK);
    CU_ASSERT_EQUAL(id, 42);
    CU_ASSERT_EQUAL(an_token_parse(&c, "--target", "no such piece", &id, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "SentencePiece piece"));
}
