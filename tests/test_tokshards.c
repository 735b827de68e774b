/* test_tokshards.c — pre-tokenised shards (rn_shard.h, `tokenizer shards`):
 * the ids equal `tokenizer encode`'s and the text path's, training and
 * evaluating from shards equals doing it from the text, and every kind of
 * bad shard (truncated, corrupt, a lying header, another tokenizer or
 * vocabulary, a missing or extra shard) is refused with one line, exit 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "kfix.h"
#include "rn_checksum.h"
#include "rn_shard.h"
#include "rn_spm.h"
#include "rn_tasks.h"
#include "rn_tokenizer.h"

#define FIXTURE KFIX_FIXTURE

static char g_tok[512], g_tok2[512], g_text[512], g_dir[512];

/* The fixture's tokenizer and text (kfix.h), a second tokenizer (another
 * vocabulary), and the text's shards, 700 tokens each. */
static int setup(void)
{
    char text2[512];
    snprintf(g_dir, sizeof g_dir, "%s", th_path("shd_dir"));
    if (kfix_make("shd", 600, g_tok, g_text, sizeof g_tok) || kfix_make("shd2", 500, g_tok2, text2, sizeof g_tok2)) return -1;
    if (th_run("%s -q tokenizer shards %s %s -o %s --shard-tokens 700", th_bin(), g_tok, g_text, g_dir)) return -1;
    return 0;
}
TH_SUITE(tokshards, setup, NULL);

#define assert_one_line_error kfix_one_line_error

static void spm_config(rn_config *c, const char *tok) { kfix_spm_config(c, tok, 600); }

TH_TEST(test_shards_ids, "the shards' ids: BOS, then each line's `tokenizer encode` ids and a newline token")
{
    rn_config c;
    spm_config(&c, g_tok);
    int *ids;
    int64_t n;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_shards_load(g_dir, &c, &ids, &n, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(th_run("%s tokenizer encode %s %s", th_bin(), g_tok, g_text), 0);
    /* the expected ids, from encode's output: BOS 1, each line's ids, then
     * <0x0A> (id 3 + 10: ids 3.. are the byte tokens) for each newline */
    const char *out = th_out();
    int64_t at = 0, bad = -1;
    if (ids[at++] != 1) bad = 0;
    size_t text_len;
    char *text = th_read_file(g_text, &text_len);
    int lines = 0;
    for (size_t i = 0; i < text_len; i++) lines += text[i] == '\n';
    CU_ASSERT_EQUAL(text[text_len - 1], '\n'); /* so every printed line is followed by a newline */
    free(text);
    for (int l = 0; l < lines && bad < 0; l++) {
        while (*out && *out != '\n') {
            char *end;
            long v = strtol(out, &end, 10);
            if (end == out) { bad = at; break; }
            if (at >= n || ids[at] != v) bad = at;
            at++;
            out = end;
            while (*out == ' ') out++;
        }
        if (*out == '\n') out++;
        if (at >= n || ids[at] != 3 + '\n') bad = at;
        at++;
    }
    CU_ASSERT_EQUAL(bad, -1);
    CU_ASSERT_EQUAL(at, n);
    CU_ASSERT_EQUAL(*out, 0);
    /* and the text path's ids (rn_tokenize_file) are the same array */
    int *tids, tn;
    CU_ASSERT_EQUAL_FATAL(rn_tokenize_file(&c, g_text, &tids, &tn, &err), RN_OK);
    CU_ASSERT_EQUAL(tn, n);
    CU_ASSERT(tn == n && !memcmp(tids, ids, (size_t)n * sizeof *ids));
    /* the separator 0x1C is its byte token, once per document */
    int seps = 0;
    for (int64_t i = 0; i < n; i++) seps += ids[i] == 3 + 0x1C;
    CU_ASSERT_EQUAL(seps, 4);
    free(tids);
    free(ids);
    /* several shards, the last flagged, each with its tokens' bytes */
    rn_shard_info h;
    uint16_t *v;
    char p[600];
    snprintf(p, sizeof p, "%s/shard-00000.rns", g_dir);
    CU_ASSERT_EQUAL_FATAL(rn_shard_read(p, &h, &v, &err), RN_OK);
    CU_ASSERT_EQUAL(h.n_tokens, 700);
    CU_ASSERT_EQUAL(h.doc_sep, 0x1C);
    CU_ASSERT_EQUAL(h.vocab, 600);
    CU_ASSERT_EQUAL(h.index, 0);
    CU_ASSERT_EQUAL(h.last, 0);
    free(v);
}

TH_TEST(test_shards_whole_text, "the shards of a text that ends without a newline, and its whole-text encoding")
{
    char text[600], dir[600];
    snprintf(text, sizeof text, "%s", th_path("shd_nonl.txt"));
    snprintf(dir, sizeof dir, "%s", th_path("shd_nonl"));
    CU_ASSERT_EQUAL_FATAL(th_run("head -c 3001 %s > %s", FIXTURE, text), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s -q tokenizer shards %s %s -o %s", th_bin(), g_tok, text, dir), 0);
    rn_config c;
    spm_config(&c, g_tok);
    int *ids, *tids, tn;
    int64_t n;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_shards_load(dir, &c, &ids, &n, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_tokenize_file(&c, text, &tids, &tn, &err), RN_OK);
    CU_ASSERT(tn == n && !memcmp(tids, ids, (size_t)n * sizeof *ids));
    /* this tokenizer encodes line by line; here that is also what one
     * SentencePiece call on the whole text gives (no piece spans a newline) */
    const rn_spm *s;
    CU_ASSERT_EQUAL_FATAL(rn_spm_get(g_tok, &s, &err), RN_OK);
    CU_ASSERT(rn_spm_by_line(s));
    size_t len;
    char *t = th_read_file(text, &len);
    int *w, wn;
    CU_ASSERT_EQUAL_FATAL(rn_spm_encode(s, t, len, &w, &wn, &err), RN_OK);
    CU_ASSERT(wn + 1 == n && !memcmp(w, ids + 1, (size_t)wn * sizeof *w));
    /* bytes: the tokens stand for the text exactly */
    size_t bytes = 0;
    for (int64_t i = 0; i < n; i++) bytes += rn_token_nbytes(&c, ids[i]);
    CU_ASSERT_EQUAL(bytes, len);
    free(t);
    free(w);
    free(ids);
    free(tids);
    /* --max-tokens keeps a prefix */
    snprintf(dir, sizeof dir, "%s", th_path("shd_prefix"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s tokenizer shards %s %s -o %s --max-tokens 77 --shard-tokens 50", th_bin(), g_tok, g_text, dir), 0);
    char summary[200];
    snprintf(summary, sizeof summary, "%s", strstr(th_err(), "wrote ") ? strstr(th_err(), "wrote ") : "");
    CU_ASSERT_EQUAL_FATAL(rn_shards_load(dir, &c, &ids, &n, &err), RN_OK);
    CU_ASSERT_EQUAL(n, 77);
    bytes = 0; /* the summary counts the bytes the 77 tokens stand for, not the block read */
    for (int64_t i = 0; i < n; i++) bytes += rn_token_nbytes(&c, ids[i]);
    char want[200];
    snprintf(want, sizeof want, "2 shards, 77 tokens for %zu bytes of text", bytes);
    CU_ASSERT_PTR_NOT_NULL(strstr(summary, want));
    CU_ASSERT_EQUAL_FATAL(rn_tokenize_file(&c, g_text, &tids, &tn, &err), RN_OK);
    CU_ASSERT(!memcmp(tids, ids, 77 * sizeof *ids));
    free(ids);
    free(tids);
}

/* The "loss" values of a --log file, in order, as one string. */
static void losses(const char *log, char *out, size_t cap)
{
    char *s = th_read_file(log, NULL);
    out[0] = 0;
    for (char *p = s; p && (p = strstr(p, "\"loss\":")); p += 7) {
        size_t at = strlen(out);
        snprintf(out + at, cap - at, "%.*s;", (int)strcspn(p + 7, ",}"), p + 7);
    }
    free(s);
}

TH_TEST(test_shards_train_eval, "training and evaluating from shards equals doing it from the text")
{
    const char *set = "--config samples/configs/tiny.cfg --set seq_len=32 --set batch=4 --set eval_windows=4 --steps 6 "
                      "--set log_every=1 --eval-every 3 --threads 1 --seed 5";
    char a[600], b[600], la[600], lb[600];
    snprintf(a, sizeof a, "%s", th_path("shd_a/m.bin"));
    snprintf(b, sizeof b, "%s", th_path("shd_b/m.bin"));
    snprintf(la, sizeof la, "%s", th_path("shd_a.log"));
    snprintf(lb, sizeof lb, "%s", th_path("shd_b.log"));
    CU_ASSERT_EQUAL_FATAL(th_run("mkdir -p %s %s", th_path("shd_a"), th_path("shd_b")), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s -q train --task text %s --set tokenizer=spm:%s --set vocab_size=600 --data %s --log %s -o %s",
                                 th_bin(), set, g_tok, g_text, la, a), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s -q train --task text %s --set tokenizer=spm:%s --set vocab_size=600 --data %s --log %s -o %s",
                                 th_bin(), set, g_tok, g_dir, lb, b), 0);
    char ca[4096], cb[4096];
    losses(la, ca, sizeof ca);
    losses(lb, cb, sizeof cb);
    CU_ASSERT(strlen(ca) > 30); /* six losses */
    CU_ASSERT_STRING_EQUAL(ca, cb);
    CU_ASSERT(th_files_equal(a, b));
    /* eval: the same numbers from the text, the directory and one shard file */
    CU_ASSERT_EQUAL_FATAL(th_run("%s eval %s --task text --data %s --whole --seq-len 32 --threads 1 -f csv", th_bin(), a, g_text), 0);
    char e1[512];
    snprintf(e1, sizeof e1, "%s", th_out());
    CU_ASSERT_PTR_NOT_NULL(strstr(e1, "bits_per_byte"));
    CU_ASSERT_EQUAL_FATAL(th_run("%s eval %s --task text --data %s --whole --seq-len 32 --threads 1 -f csv", th_bin(), a, g_dir), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), e1);
    char one[600], t1[600];
    snprintf(one, sizeof one, "%s", th_path("shd_one"));
    snprintf(t1, sizeof t1, "%s", th_path("shd_one.txt"));
    CU_ASSERT_EQUAL_FATAL(th_run("head -c 2000 %s > %s && %s -q tokenizer shards %s %s -o %s", FIXTURE, t1, th_bin(), g_tok, t1, one), 0);
    CU_ASSERT_EQUAL_FATAL(th_run("%s eval %s --task text --data %s --whole --seq-len 32 --threads 1 -f csv", th_bin(), a, t1), 0);
    snprintf(e1, sizeof e1, "%s", th_out());
    CU_ASSERT_EQUAL_FATAL(th_run("%s eval %s --task text --data %s/shard-00000.rns --whole --seq-len 32 --threads 1 -f csv", th_bin(), a, one), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), e1);
}

/* A fresh copy of the suite's shard set as dir. */
static void copy_set(const char *dir)
{
    CU_ASSERT_EQUAL_FATAL(th_run("rm -rf %s && cp -r %s %s", dir, g_dir, dir), 0);
}

/* Refused by eval with one line naming the problem. */
static void assert_refused(const char *data, const char *needle)
{
    char model[600];
    snprintf(model, sizeof model, "%s", th_path("shd_m/m.bin"));
    if (!th_file_exists(model))
        CU_ASSERT_EQUAL_FATAL(th_run("mkdir -p %s && %s -q init --config samples/configs/tiny.cfg --tokenizer spm:%s "
                                     "--vocab-size 600 -o %s", th_path("shd_m"), th_bin(), g_tok, model), 0);
    CU_ASSERT_EQUAL(th_run("%s eval %s --task text --data %s --whole --seq-len 32", th_bin(), model, data), 2);
    assert_one_line_error(needle);
}

/* Rewrite the header field at off (len bytes, little-endian v) of a shard
 * file and, when fix, its header checksum. */
static void poke(const char *path, int off, int len, uint64_t v, int fix)
{
    size_t n;
    uint8_t *b = (uint8_t *)th_read_file(path, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    for (int i = 0; i < len; i++) b[off + i] = (uint8_t)(v >> (8 * i));
    if (fix) {
        uint64_t s = rn_checksum64(b, 56);
        for (int i = 0; i < 8; i++) b[56 + i] = (uint8_t)(s >> (8 * i));
    }
    CU_ASSERT_EQUAL(th_write_file(path, b, n), 0);
    free(b);
}

/* A header field rewritten: where, how wide, the value, whether the
 * header checksum is recomputed, and the error it must give. */
typedef struct { int off, len; uint64_t val; int fix; const char *needle; } poke_case;

TH_TEST(test_shards_corrupt, "truncated, corrupt and lying shards, each refused with one line")
{
    char dir[600], s0[700], s1[700];
    snprintf(dir, sizeof dir, "%s", th_path("shd_bad"));
    snprintf(s0, sizeof s0, "%s/shard-00000.rns", dir);
    snprintf(s1, sizeof s1, "%s/shard-00001.rns", dir);
    static const struct { const char *cmd, *needle; } cuts[] = {
        { "truncate -s 40 %s", "truncated: 40 bytes" },
        { "truncate -s -7 %s", "no complete zstd frame" },
        { "printf 'xyz' >> %s", "3 trailing bytes" },
    };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        copy_set(dir);
        CU_ASSERT_EQUAL(th_run(cuts[i].cmd, s1), 0);
        assert_refused(dir, cuts[i].needle);
    }
    static const poke_case pokes[] = {
        { 100, 1, 0x5a, 0, "shard-00001.rns: corrupt data" }, /* inside the compressed data */
        { 40, 1, 0x11, 0, "header checksum mismatch" },       /* a header byte, checksum left */
        { 0, 1, 'X', 0, "not a shard file (bad magic)" },
        /* lying headers, their checksum recomputed */
        { 40, 8, 12345, 1, "the header says 12345 bytes of text" },
        { 32, 8, 699, 1, "the header promises 699 tokens" },
        { 16, 4, 601, 1, "made for a vocabulary of 601" },
        { 16, 4, 70000, 1, "vocabulary 70000 outside" },
        { 8, 4, 2, 1, "unknown shard version 2" },
        { 20, 4, 300, 1, "document separator 300 is not a byte" },
        { 20, 4, 10, 1, "shards of different sets" },
        { 24, 8, 42, 1, "made with another tokenizer" },
        { 52, 4, 4, 1, "unknown flags 0x4" },
    };
    for (size_t i = 0; i < sizeof pokes / sizeof pokes[0]; i++) {
        copy_set(dir);
        poke(s1, pokes[i].off, pokes[i].len, pokes[i].val, pokes[i].fix);
        assert_refused(dir, pokes[i].needle);
    }
    /* the set: a missing shard, a wrong last flag, an empty directory */
    copy_set(dir);
    CU_ASSERT_EQUAL(th_run("rm %s", s1), 0);
    assert_refused(dir, "shard 2 of its set where shard 1 belongs");
    copy_set(dir);
    CU_ASSERT_EQUAL(th_run("cd %s && rm $(ls | tail -1)", dir), 0);
    assert_refused(dir, "the set's last shard is missing");
    copy_set(dir);
    poke(s0, 52, 4, 1, 1);
    assert_refused(dir, "marked the last shard but more follow");
    CU_ASSERT_EQUAL(th_run("rm -rf %s && mkdir %s", dir, dir), 0);
    assert_refused(dir, "no shard files");
    /* an id at or past the vocabulary (a header claiming a smaller one) */
    rn_shard_info h = { 600, 0x1C, 0, 3, 0, 0, 1 };
    uint16_t bad[3] = { 1, 5, 600 };
    rn_error err;
    rn_config c;
    spm_config(&c, g_tok);
    const rn_spm *s;
    CU_ASSERT_EQUAL_FATAL(rn_spm_get(g_tok, &s, &err), RN_OK);
    h.tok_checksum = rn_spm_checksum(s);
    snprintf(s0, sizeof s0, "%s", th_path("shd_badid.rns"));
    CU_ASSERT_EQUAL_FATAL(rn_shard_write(s0, &h, bad, 3, &err), RN_OK);
    assert_refused(s0, "token 2 is id 600, outside the vocabulary of 600");
}

TH_TEST(test_shards_refusals, "another tokenizer, a bytes model, and the maker's bad input")
{
    char m2[600];
    snprintf(m2, sizeof m2, "%s", th_path("shd_m2/m.bin"));
    CU_ASSERT_EQUAL_FATAL(th_run("mkdir -p %s && %s -q init --config samples/configs/tiny.cfg --tokenizer spm:%s "
                                 "--vocab-size 600 -o %s", th_path("shd_m2"), th_bin(), g_tok2, m2), 0);
    CU_ASSERT_EQUAL(th_run("%s eval %s --task text --data %s --whole --seq-len 32", th_bin(), m2, g_dir), 2);
    assert_one_line_error("shard-00000.rns: made with another tokenizer");
    CU_ASSERT_EQUAL(th_run("%s -q train --task text --config samples/configs/tiny.cfg --set tokenizer=spm:%s --set vocab_size=600 "
                           "--data %s --steps 1 -o %s", th_bin(), g_tok2, g_dir, th_path("shd_never.bin")), 2);
    assert_one_line_error("made with another tokenizer");
    CU_ASSERT(!th_file_exists(th_path("shd_never.bin")));
    CU_ASSERT_EQUAL(th_run("%s -q train --task text --config samples/configs/tiny.cfg --data %s/shard-00000.rns --steps 1 -o %s",
                           th_bin(), g_dir, th_path("shd_never.bin")), 2);
    assert_one_line_error("shards hold SentencePiece ids");
    /* the maker */
    CU_ASSERT_EQUAL(th_run("%s tokenizer shards %s %s -o %s", th_bin(), g_tok, g_text, g_dir), 2);
    assert_one_line_error("exists; remove it");
    char empty[600], out[600];
    snprintf(empty, sizeof empty, "%s", th_path("shd_empty.txt"));
    snprintf(out, sizeof out, "%s", th_path("shd_none"));
    CU_ASSERT_EQUAL(th_write_file(empty, "", 0), 0);
    CU_ASSERT_EQUAL(th_run("%s tokenizer shards %s %s -o %s", th_bin(), g_tok, empty, out), 2);
    assert_one_line_error("text is empty");
    CU_ASSERT_EQUAL(th_run("%s tokenizer shards %s %s -o %s", th_bin(), g_text, g_text, out), 2);
    assert_one_line_error("not a SentencePiece model");
    CU_ASSERT_EQUAL(th_run("%s tokenizer shards %s %s -o %s --shard-tokens 0", th_bin(), g_tok, g_text, out), 2);
    assert_one_line_error("--shard-tokens");
    CU_ASSERT_EQUAL(th_run("%s tokenizer shards %s %s", th_bin(), g_tok, g_text), 2);
    assert_one_line_error("no output directory");
    CU_ASSERT_EQUAL(th_run("ls -d %s* 2>/dev/null | wc -l", out), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), "0\n"); /* nothing left behind, no temp directory */
}
