/* cmd_plot.c — `ramtrace plot KIND TRACE.db -o FILE`: draw a figure of a
 * traced run, or of another input.  The kinds are figure/'s table, one
 * file each (fig_figure.h); this parses plot's own options for the kinds
 * that read them and dispatches once. */
#include <cairo.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "an_shards.h"
#include "cli.h"
#include "fig_figure.h"

const char cmd_plot_summary[] = "draw a figure of a trace, a benchmark or a sweep (plot --help lists the kinds)";

static void usage(void)
{
    printf("usage: ramtrace plot KIND TRACE.db -o FILE.png|.svg|.pdf [options]\n\n"
           "Draw a figure of a traced run; the format follows the output's extension.\n\n"
           "kinds:\n");
    for (int i = 0; i < fig_kind_count(); i++) { /* the table, figure/fig_figure.h */
        const fig_kind_def *k = fig_kind_at(i);
        const char *line = k->help;
        for (int first = 1; *line; first = 0) {
            size_t len = strcspn(line, "\n");
            printf("  %-12s %.*s\n", first ? k->name : "", (int)len, line);
            line += len + (line[len] == '\n');
        }
    }
    printf("\noptions:\n"
           "  -o, --output FILE     output file (.png, .svg or .pdf; required)\n"
           "  -r, --run ID          run id (default: the latest run)\n"
           "  -l, --layers LIST     layers, e.g. 0-3,7 or all (default all)\n"
           "  -H, --heads LIST      heads, e.g. 0,2 or all (default all)\n"
           "      --ops r|w|rw      which accesses to draw or count (default rw)\n"
           "      --from POS        first token position (default 0)\n"
           "      --to POS          end position, exclusive (default: the run's end;\n"
           "                        attribution: 48 tokens from --from)\n"
           "  -W, --width PX        page width in px at 96 DPI (default depends on kind)\n"
           "  -E, --height PX       page height in px (default depends on kind)\n"
           "      --dpi N           PNG resolution (default 96; 192 doubles the pixels)\n"
           "      --font PX         label size (default 13)\n"
           "      --cols N          trace: panels per row (default about square)\n"
           "      --addr            trace: y = address before CAPE instead of the slot\n"
           "      --palette NAME    trace: okabe-ito (default; colour-blind safe) or\n"
           "                        paper (writes red, reads green)\n"
           "      --buckets N       heatmap: time buckets (default min(tokens, 256))\n"
           "      --slot-bins N     heatmap: slot bins (default min(slots, 128))\n"
           "      --model           heatmap: the layers x heads grid\n"
           "      --log             heatmap, attribution: log colour scale; mrc: log\n"
           "                        capacity axis\n"
           "      --cmap NAME       viridis (default), greys or blues\n"
           "      --policies LIST   mrc: comma-separated policies (below) or all (default\n"
           "                        lru,fifo,clock,arc,opt)\n"
           "      --scope S         mrc/reuse: cache per head, layer or model (default model,\n"
           "                        as in simulate)\n"
           "      --warmup T        mrc: tokens that warm the caches uncounted (default 0)\n"
           "      --sample R        mrc: estimate the curves from keys sampled at rate R\n"
           "                        (0.01, 1%%) or with at most N keys (8192keys): SHARDS\n"
           "                        for LRU, mini-simulations for the others; the rate\n"
           "                        is in the legend\n"
           "      --title TEXT      figure title (trace, several heads: above the panels)\n"
           "      --csv FILE        frontier, scaling: the sweep's results CSV (required)\n"
           "      --anchors FILE    frontier: the published baselines CSV\n"
           "  -j, --threads N       mrc: run the policy x capacity simulations on N\n"
           "                        threads at once (default: the free cores); the other\n"
           "                        kinds draw on one thread\n"
           "  -h, --help            this text\n\n");
    cli_print_policies(stdout, 0);
    printf("\nexamples:\n"
           "  ramtrace plot trace run.db --layers 0,3 --heads 0,1 -o trace.png\n"
           "  ramtrace plot heatmap run.db --model -o heads.pdf\n"
           "  ramtrace plot mrc run.db --log -o mrc.svg\n");
}

enum { O_OPS = 256, O_FROM, O_TO, O_DPI, O_FONT, O_COLS, O_BUCKETS, O_BINS, O_MODEL, O_LOG,
       O_CMAP, O_POLICIES, O_SCOPE, O_TITLE, O_WARMUP, O_ADDR, O_PALETTE, O_SAMPLE };

/* Ctrl-C stops a long capacity sweep between simulations. */
static int stop_requested(void *user, int done, int total)
{
    (void)user; (void)done; (void)total;
    return cli_stop_flag;
}

/* What a kind with its own arguments (figure/) reports and parses with;
 * `ramtrace patch` uses it too. */
const fig_front cmd_plot_front = { cli_usage_error, cli_fail, cli_parse_long, cli_parse_double, cli_threads };

/* plot [options] KIND INPUT: a kind of a traced run or of a file, with
 * plot's options; the exit status. */
static int plot_input(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' }, { "run", required_argument, 0, 'r' },
        { "layers", required_argument, 0, 'l' }, { "heads", required_argument, 0, 'H' },
        { "ops", required_argument, 0, O_OPS }, { "from", required_argument, 0, O_FROM },
        { "to", required_argument, 0, O_TO }, { "width", required_argument, 0, 'W' },
        { "height", required_argument, 0, 'E' }, { "dpi", required_argument, 0, O_DPI },
        { "font", required_argument, 0, O_FONT }, { "cols", required_argument, 0, O_COLS },
        { "buckets", required_argument, 0, O_BUCKETS }, { "slot-bins", required_argument, 0, O_BINS },
        { "model", no_argument, 0, O_MODEL }, { "log", no_argument, 0, O_LOG },
        { "cmap", required_argument, 0, O_CMAP }, { "policies", required_argument, 0, O_POLICIES },
        { "scope", required_argument, 0, O_SCOPE }, { "title", required_argument, 0, O_TITLE },
        { "warmup", required_argument, 0, O_WARMUP }, { "addr", no_argument, 0, O_ADDR },
        { "sample", required_argument, 0, O_SAMPLE },
        { "palette", required_argument, 0, O_PALETTE }, { "threads", required_argument, 0, 'j' },
        { 0, 0, 0, 0 }
    };
    fig_opts o;
    fig_opts_default(&o);
    rn_error err = { 0 };
    long v, threads = 0;
    uint64_t u;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:r:l:H:W:E:j:", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'o': o.out_path = optarg; break;
        case 'r':
            rc = cli_parse_u64("--run", optarg, &u, &err);
            if (!rc && u > INT64_MAX) rc = rn_seterr(&err, RN_EINPUT, "--run: %s is not a run id", optarg);
            o.run_id = (int64_t)u;
            break;
        case 'l': o.layers = optarg; break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break;
        case 'H': o.heads = optarg; break;
        case O_OPS: o.ops = optarg; break;
        case O_FROM: rc = cli_parse_long("--from", optarg, 0, 1L << 40, &v, &err); o.pos_lo = v; break;
        case O_TO: rc = cli_parse_long("--to", optarg, 1, 1L << 40, &v, &err); o.pos_hi = v; break;
        case 'W': rc = cli_parse_double("--width", optarg, 16, 20000, &o.width, &err); break;
        case 'E': rc = cli_parse_double("--height", optarg, 16, 20000, &o.height, &err); break;
        case O_DPI: rc = cli_parse_double("--dpi", optarg, 10, 1200, &o.dpi, &err); break;
        case O_FONT: rc = cli_parse_double("--font", optarg, 4, 72, &o.font, &err); break;
        case O_COLS: rc = cli_parse_long("--cols", optarg, 1, 64, &v, &err); o.cols = (int)v; break;
        case O_BUCKETS: rc = cli_parse_long("--buckets", optarg, 1, 8192, &v, &err); o.buckets = (int)v; break;
        case O_BINS: rc = cli_parse_long("--slot-bins", optarg, 1, 8192, &v, &err); o.slot_bins = (int)v; break;
        case O_MODEL: o.model = 1; break;
        case O_LOG: o.log = 1; break;
        case O_CMAP: {
            int m = viz_cmap_from_name(optarg);
            if (m < 0) return cli_usage_error("plot", "--cmap: unknown colour map '%s' (viridis, greys, blues)", optarg);
            o.cmap = (viz_cmap)m;
            break;
        }
        case O_ADDR: o.addr = 1; break;
        case O_PALETTE:
            o.palette = fig_palette_from_name(optarg);
            if (o.palette < 0) return cli_usage_error("plot", "--palette: unknown palette '%s' (okabe-ito, paper)", optarg);
            break;
        case O_POLICIES: o.policies = optarg; break;
        case O_SAMPLE: rc = an_shards_parse(optarg, &o.sample, &err); break;
        case O_SCOPE: o.scope = optarg; break;
        case O_TITLE: o.title = optarg; break;
        case O_WARMUP: rc = cli_parse_long("--warmup", optarg, 0, INT32_MAX, &v, &err); o.warmup = (int32_t)v; break;
        case ':': return cli_usage_error("plot", "option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("plot", "unknown option %s", argv[optind - 1]);
        }
        if (rc) return cli_usage_error("plot", "%s", err.msg);
    }
    if (argc - optind != 2) return cli_usage_error("plot", "expected KIND and TRACE.db");
    o.kind = fig_kind_find(argv[optind]);
    if (!o.kind || o.kind->input == FIG_INPUT_ARGS) { /* (those are named first: cmd_plot) */
        char names[512];
        fig_kind_list(names, sizeof names);
        return cli_usage_error("plot", "unknown plot kind '%s' (%s)", argv[optind], names);
    }
    o.db_path = argv[optind + 1];
    if (!o.out_path) return cli_usage_error("plot", "-o FILE is required");
    if (o.kind->input == FIG_INPUT_TRACE) {
        if (o.pos_hi >= 0 && o.pos_hi <= o.pos_lo)
            return cli_usage_error("plot", "--to %lld must be greater than --from %lld", (long long)o.pos_hi,
                                   (long long)o.pos_lo);
        o.progress = stop_requested;
        cli_install_signals();
        cli_threads(threads);
    }
    return fig_draw(&o, &err) ? cli_fail(&err) : 0;
}

int cmd_plot(int argc, char **argv)
{
    /* a kind that reads its own arguments (a patching sweep, a results
     * CSV) is named first: plot KIND ARGS... */
    const fig_kind_def *k = argc > 1 ? fig_kind_find(argv[1]) : NULL;
    int rc;
    if (k && k->input == FIG_INPUT_ARGS) {
        if (cli_wants_help(argc - 1, argv + 1)) {
            if (k->usage) fputs(k->usage, stdout);
            else usage();
            return 0;
        }
        rc = k->run(argc - 1, argv + 1, &cmd_plot_front);
    } else {
        if (cli_wants_help(argc, argv)) { usage(); return 0; }
        rc = plot_input(argc, argv);
    }
    /* drop cairo's font caches so leak checkers see a clean exit */
    cairo_debug_reset_static_data();
    return rc;
}
