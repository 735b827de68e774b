/* cmd_tokenizer.c — `ramtrace tokenizer train`: a SentencePiece tokenizer
 * for `tokenizer = spm:FILE` (core/model/rn_spm.h), with the options code
 * and other text need: byte fallback, no normalisation, whitespace kept;
 * `tokenizer encode`: the ids ramtrace gives each line of a file (to
 * compare with spm_encode's); and `tokenizer shards`: a text pre-tokenised
 * into shard files for train/eval (core/model/rn_shard_make.h). */
#include <fcntl.h>
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rn_atomic.h"
#include "rn_file.h"
#include "rn_shard.h"
#include "rn_shard_make.h"
#include "rn_spm.h"
#include "rn_tokenizer.h"

const char cmd_tokenizer_summary[] = "train a SentencePiece tokenizer (spm:FILE)";

static const char usage[] =
    "usage: ramtrace tokenizer train --vocab N CORPUS... -o FILE.model [options]\n"
    "       ramtrace tokenizer encode FILE.model TEXT\n"
    "       ramtrace tokenizer shards FILE.model TEXT -o DIR [--max-tokens N]\n"
    "                [--shard-tokens N] [--doc-sep BYTE|none] [--level N]\n"
    "\n"
    "shards: encode TEXT (BOS first, as train/eval --task text do) into DIR\n"
    "(which must not exist) as zstd-compressed uint16 shard files\n"
    "shard-00000.rns, ... that `train`/`eval --task text --data DIR` read in\n"
    "place of the text (options below).  Progress goes to stderr\n"
    "(docs/shards.md).\n"
    "\n"
    "encode: print the ids of each line of TEXT (without its newline and\n"
    "without BOS), space-separated, one line each, as\n"
    "`spm_encode --model=FILE.model --output_format=id` does.\n"
    "\n"
    "Train a SentencePiece tokenizer on the CORPUS files (read as lines) and\n"
    "write its .model to FILE, for `--tokenizer spm:FILE` (docs/config.md).  The\n"
    "tokenizer keeps every byte of the text: byte fallback on (a byte no piece\n"
    "covers is one of 256 byte tokens), no Unicode normalisation, whitespace\n"
    "kept as it is (runs of spaces and tabs become pieces), no space put before\n"
    "the text, digits split.  Ids: 0 <unk>, 1 <s> (the BOS), 2 </s>, 3.. the\n"
    "byte tokens and pieces.  SentencePiece's own progress goes to stderr\n"
    "(not with -q).\n"
    "\n"
    "options:\n"
    "  --vocab N           pieces, bytes and specials included (required;\n"
    "                      259 + 1 .. 65536)\n"
    "  -o, --output FILE   the .model to write (atomically)\n"
    "  --type T            unigram (default) or bpe\n"
    "  --max-lines N       train on at most N lines, sampled from the corpus\n"
    "                      (default 2000000; 0 = all)\n"
    "  --max-line-len N    lines longer than N bytes are left out (default 4096)\n"
    "  -j, --threads N     trainer threads (default: the free cores)\n"
    "  --max-tokens N      shards: keep the first N tokens (default: all)\n"
    "  --shard-tokens N    shards: tokens per file (default 16777216)\n"
    "  --doc-sep BYTE      shards: the document separator recorded, 0..255 or\n"
    "                      none (default 28, the kernel corpus's 0x1C)\n"
    "  --level N           shards: the zstd level, 1..22 (default 19)\n"
    "  -h, --help          this text\n"
    "\n"
    "docs/tokenizers.md gives the same training as an spm_train command.\n";

/* `tokenizer encode MODEL TEXT`: each line through rn_tokenize. */
static int encode_lines(const char *model, const char *text)
{
    rn_error err = { 0, "" };
    rn_config c;
    rn_config_default(&c);
    char *data;
    size_t len;
    c.tokenizer = RN_TOK_SPM;
    if (snprintf(c.tok_file, sizeof c.tok_file, "%s", model) >= (int)sizeof c.tok_file)
        return cli_usage_error("tokenizer", "%s: path too long", model);
    const rn_spm *s;
    if (rn_spm_get(model, &s, &err)) return cli_fail(&err);
    c.vocab_size = rn_spm_vocab(s);
    if (rn_read_file(text, &data, &len, &err)) return cli_fail(&err);
    int bos = rn_spm_bos(s) >= 0, rc = 0;
    for (size_t i = 0; i < len && !rc;) {
        size_t j = i;
        while (j < len && data[j] != '\n') j++;
        int *ids = NULL, n = 0;
        if (j > i && (rc = rn_tokenize(&c, data + i, j - i, text, &ids, &n, &err))) break;
        for (int k = bos; k < n; k++) printf(k > bos ? " %d" : "%d", ids[k]);
        putchar('\n');
        free(ids);
        i = j + 1;
    }
    free(data);
    return rc ? cli_fail(&err) : 0;
}

static void shards_progress(void *ctx, const rn_shards_stats *st)
{
    (void)ctx;
    cli_info("ramtrace tokenizer shards: %.1f of %.1f MB read, %lld tokens, %d shards (%.1f MB)\n",
             st->bytes_read / 1e6, st->bytes_total / 1e6, (long long)st->tokens, st->shards, st->compressed / 1e6);
}

/* `tokenizer shards MODEL TEXT -o DIR [options]`. */
static int make_shards(int argc, char **argv)
{
    static const struct option lo[] = {
        { "output", 1, 0, 'o' }, { "max-tokens", 1, 0, 'm' }, { "shard-tokens", 1, 0, 's' },
        { "doc-sep", 1, 0, 'd' }, { "level", 1, 0, 'l' }, { 0, 0, 0, 0 } };
    long max_tokens = 0, shard_tokens = 1L << 24, sep = 28, level = 19;
    rn_shards_opts o = { 0 };
    rn_error err = { 0, "" };
    optind = 2;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":o:", lo, NULL)) != -1) {
        switch (ch) {
        case 'o': o.dir = optarg; break;
        case 'm': if (cli_parse_long("--max-tokens", optarg, 1, INT32_MAX / 2, &max_tokens, &err)) return cli_fail(&err); break;
        case 's': if (cli_parse_long("--shard-tokens", optarg, 1, 1L << 30, &shard_tokens, &err)) return cli_fail(&err); break;
        case 'd':
            if (!strcmp(optarg, "none")) sep = -1;
            else if (cli_parse_long("--doc-sep", optarg, 0, 255, &sep, &err)) return cli_fail(&err);
            break;
        case 'l': if (cli_parse_long("--level", optarg, 1, 22, &level, &err)) return cli_fail(&err); break;
        case ':': return cli_usage_error("tokenizer", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("tokenizer", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2) return cli_usage_error("tokenizer", "shards: expected FILE.model and TEXT");
    if (!o.dir) return cli_usage_error("tokenizer", "shards: no output directory (-o DIR)");
    o.tokenizer = argv[optind];
    o.text = argv[optind + 1];
    o.max_tokens = max_tokens;
    o.shard_tokens = shard_tokens;
    o.doc_sep = sep < 0 ? RN_SHARD_NO_SEP : (uint32_t)sep;
    o.level = (int)level;
    o.progress = shards_progress;
    rn_shards_stats st;
    if (rn_shards_make(&o, &st, &err)) return cli_fail(&err);
    cli_info("ramtrace tokenizer shards: wrote %s: %d shards, %lld tokens for %lld bytes of text (%.3f per token), "
             "%lld bytes compressed (%.3f per token)\n",
             o.dir, st.shards, (long long)st.tokens, (long long)st.token_bytes, (double)st.token_bytes / (double)st.tokens,
             (long long)st.compressed, (double)st.compressed / (double)st.tokens);
    return 0;
}

int cmd_tokenizer(int argc, char **argv)
{
    if (cli_wants_help(argc, argv) || (argc >= 2 && !strcmp(argv[1], "train") && cli_wants_help(argc - 1, argv + 1))) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "encode")) {
        if (argc != 4) return cli_usage_error("tokenizer", "encode: expected FILE.model and TEXT");
        return encode_lines(argv[2], argv[3]);
    }
    if (argc >= 2 && !strcmp(argv[1], "shards")) return make_shards(argc, argv);
    if (argc < 2 || strcmp(argv[1], "train"))
        return cli_usage_error("tokenizer", argc < 2 ? "expected a subcommand: train, encode or shards%s"
                                                     : "unknown subcommand '%s' (expected train, encode or shards)",
                               argc < 2 ? "" : argv[1]);
    static const struct option lo[] = {
        { "vocab", 1, 0, 'v' }, { "output", 1, 0, 'o' }, { "type", 1, 0, 't' }, { "max-lines", 1, 0, 'm' },
        { "max-line-len", 1, 0, 'L' }, { "threads", 1, 0, 'j' }, { 0, 0, 0, 0 } };
    long vocab = 0, max_lines = 2000000, max_len = 4096, threads = 0;
    const char *out = NULL, *type = "unigram";
    rn_error err = { 0, "" };
    optind = 2;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":o:j:", lo, NULL)) != -1) {
        switch (ch) {
        case 'v': if (cli_parse_long("--vocab", optarg, 260, 65536, &vocab, &err)) return cli_fail(&err); break;
        case 'o': out = optarg; break;
        case 't':
            if (strcmp(optarg, "unigram") && strcmp(optarg, "bpe"))
                return cli_usage_error("tokenizer", "--type: '%s' is not unigram or bpe", optarg);
            type = optarg;
            break;
        case 'm': if (cli_parse_long("--max-lines", optarg, 0, 1L << 40, &max_lines, &err)) return cli_fail(&err); break;
        case 'L': if (cli_parse_long("--max-line-len", optarg, 16, 1 << 24, &max_len, &err)) return cli_fail(&err); break;
        case 'j': if (cli_parse_long("--threads", optarg, 1, 1024, &threads, &err)) return cli_fail(&err); break;
        case ':': return cli_usage_error("tokenizer", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("tokenizer", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!vocab) return cli_usage_error("tokenizer", "no vocabulary size (--vocab N)");
    if (!out) return cli_usage_error("tokenizer", "no output (-o FILE.model)");
    if (optind >= argc) return cli_usage_error("tokenizer", "no corpus given");
    size_t il = 0;
    for (int i = optind; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            rn_seterr(&err, RN_EINPUT, "%s: cannot open corpus", argv[i]);
            return cli_fail(&err);
        }
        fclose(f);
        if (strchr(argv[i], ','))
            return cli_usage_error("tokenizer", "%s: a corpus name may not contain ','", argv[i]);
        il += strlen(argv[i]) + 1;
        if ((rn_atomic_check_not_input(argv[i], out, &err))) return cli_fail(&err);
    }
    char *input = malloc(il);
    if (!input) { rn_seterr(&err, RN_ENOMEM, "out of memory"); return cli_fail(&err); }
    input[0] = 0;
    for (int i = optind; i < argc; i++) {
        if (i > optind) strcat(input, ",");
        strcat(input, argv[i]);
    }
    if (!threads) { cli_threads(0); threads = omp_get_max_threads(); }
    char v[24], ml[24], mll[24], th[24];
    snprintf(v, sizeof v, "%ld", vocab);
    snprintf(ml, sizeof ml, "%ld", max_lines);
    snprintf(mll, sizeof mll, "%ld", max_len);
    snprintf(th, sizeof th, "%ld", threads);
    const char *keys[] = { "input", "vocab_size", "model_type", "byte_fallback", "normalization_rule_name",
                           "remove_extra_whitespaces", "add_dummy_prefix", "allow_whitespace_only_pieces",
                           "split_digits", "character_coverage", "input_sentence_size", "shuffle_input_sentence",
                           "max_sentence_length", "num_threads" };
    const char *vals[] = { input, v, type, "true", "identity", "false", "false", "true", "true", "1.0", ml, "true",
                           mll, th };
    cli_info("ramtrace tokenizer: training a %s tokenizer of %ld pieces on %s\n", type, vocab, input);
    char *model;
    size_t len;
    /* SentencePiece logs its progress to stderr, with no switch: -q sends
     * it to /dev/null for the training (our own errors come after) */
    int saved = -1;
    if (cli_quiet) {
        int dn = open("/dev/null", O_WRONLY | O_CLOEXEC);
        fflush(stderr);
        if (dn >= 0 && (saved = dup(2)) >= 0) dup2(dn, 2);
        if (dn >= 0) close(dn);
    }
    int rc = rn_spm_train(keys, vals, (int)(sizeof keys / sizeof keys[0]), &model, &len, &err);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    free(input);
    if (rc) return cli_fail(&err);
    rc = rn_atomic_write(out, model, len, &err);
    free(model);
    if (rc) return cli_fail(&err);
    cli_info("ramtrace tokenizer: wrote %s (%zu bytes)\n", out, len);
    return 0;
}
