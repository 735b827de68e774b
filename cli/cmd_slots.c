/* cmd_slots.c — `ramtrace slots MODEL INPUT --layer L --head H`: what each
 * slot of a head holds after a position — its writers, state and logit lens
 * (analysis/an_slots.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "an_slots.h"
#include "cli.h"
#include "rn_atomic.h"
#include "rn_modelfile.h"
#include "rn_rows.h"
#include "rn_tokenizer.h"

const char cmd_slots_summary[] = "what each memory slot of a head holds: writers, state, logit lens";

static const char usage[] =
    "usage: ramtrace slots MODEL INPUT --layer L --head H [options]\n"
    "\n"
    "Run MODEL over INPUT (tokenized like a prompt) up to position POS and, for\n"
    "every slot of head (L, H) written so far, list the positions and tokens\n"
    "that wrote it (weight w and share of the slot now: w times the later\n"
    "writes' decays over z), its state norm |S| and z, and the logit lens of\n"
    "S/(z + eps) through the head's slice of o_proj, the final norm and the\n"
    "unembedding: the tokens the slot's content promotes.\n"
    "\n"
    "options:\n"
    "      --layer L         layer (required)\n"
    "      --head H          head (required)\n"
    "      --at POS          last position fed to the model (default: the input's end)\n"
    "      --top N           promoted tokens per slot (default 5)\n"
    "      --writers N       writers shown per slot in the table (default 5; 0 = all)\n"
    "  -f, --format F        table (default), csv or json\n"
    "  -o, --output FILE     write to FILE instead of stdout (atomically; - is stdout)\n"
    "  -j, --threads N       threads (default: the free cores)\n"
    "  -h, --help            this text\n"
    "\n"
    "example: ramtrace slots samples/kjv.bin samples/prompts/kjv.txt --layer 3 --head 0 --top 3\n";

int cmd_slots(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fputs(usage, stdout); return 0; }
    enum { O_LAYER = 256, O_HEAD, O_AT, O_TOP, O_WRITERS };
    static const struct option opts[] = {
        { "layer", required_argument, 0, O_LAYER }, { "head", required_argument, 0, O_HEAD },
        { "at", required_argument, 0, O_AT }, { "top", required_argument, 0, O_TOP },
        { "writers", required_argument, 0, O_WRITERS }, { "format", required_argument, 0, 'f' },
        { "output", required_argument, 0, 'o' }, { "threads", required_argument, 0, 'j' },
        { 0, 0, 0, 0 } };
    long layer = -1, head = -1, at = -1, top = 5, writers = 5, threads = 0;
    int fmt = RN_FMT_TABLE, c;
    const char *outp = NULL;
    rn_error err = { 0 };
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:j:", opts, NULL)) != -1) {
        int rc = RN_OK;
        switch (c) {
        case O_LAYER: rc = cli_parse_long("--layer", optarg, 0, RN_MAX_LAYERS - 1, &layer, &err); break;
        case O_HEAD: rc = cli_parse_long("--head", optarg, 0, RN_MAX_HEADS - 1, &head, &err); break;
        case O_AT: rc = cli_parse_long("--at", optarg, 0, INT32_MAX - 1, &at, &err); break;
        case O_TOP: rc = cli_parse_long("--top", optarg, 1, 1L << 20, &top, &err); break;
        case O_WRITERS: rc = cli_parse_long("--writers", optarg, 0, INT32_MAX, &writers, &err); break;
        case 'f': rc = rn_format_parse(optarg, &fmt, &err); break;
        case 'o': outp = optarg; break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break;
        case ':': return cli_usage_error(argv[0], "%s needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
        if (rc) return cli_usage_error(argv[0], "%s", err.msg);
    }
    if (argc - optind != 2) return cli_usage_error(argv[0], "expected MODEL and INPUT");
    if (layer < 0 || head < 0) return cli_usage_error(argv[0], "--layer and --head are required");
    cli_threads(threads);
    rn_model model;
    int rc = rn_model_load(&model, argv[optind], &err);
    if (rc) return cli_fail(&err);
    int *toks = NULL, n = 0;
    an_slots s = { 0 };
    rn_atomic_file af;
    int have_af = 0;
    FILE *f = stdout;
    if (top > model.cfg.vocab_size) top = model.cfg.vocab_size;
    if ((rc = rn_tokenize_file(&model.cfg, argv[optind + 1], &toks, &n, &err))) goto out;
    if ((rc = an_slots_compute(&model, toks, n, (int)layer, (int)head, (int)at, (int)top, &s, &err))) goto out;
    if (outp) {
        if ((rc = rn_atomic_check_not_input(argv[optind + 1], outp, &err)) ||
            (rc = rn_atomic_open_text(&af, outp, &err)))
            goto out;
        have_af = 1;
        f = af.f;
    }
    if ((rc = an_slots_print(f, fmt, &s, &model.cfg, (int)writers, &err))) goto out;
    if (have_af) { have_af = 0; rc = rn_atomic_commit(&af, &err); }
out:
    if (have_af) rn_atomic_abort(&af);
    an_slots_free(&s);
    free(toks);
    rn_model_free(&model);
    return rc ? cli_fail(&err) : 0;
}
