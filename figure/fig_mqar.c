/* fig_mqar.c — what the MQAR figures share (fig_mqar.h): their accuracy
 * axis, their page and their command line, `ramtrace plot frontier|scaling
 * --csv RESULTS.csv ...`; each figure is its own kind (fig_frontier.c,
 * fig_scaling.c). */
#include "fig_mqar.h"

#include <getopt.h>
#include <string.h>

viz_axis fig_mqar_accuracy_axis(const char *label)
{
    /* 2% above 1 so points at 1 are not cut by the frame; the ticks stop at 1 */
    return viz_axis_make(0, 1.02, 0, 0, label);
}

void fig_mqar_page(const fig_mqar_opts *o, double *W, double *H, double *dpi, double *font)
{
    *W = o->width > 0 ? o->width : 1100;
    *H = o->height > 0 ? o->height : 460;
    *dpi = o->dpi > 0 ? o->dpi : 96;
    *font = o->font > 0 ? o->font : 13;
}

/* The options of `plot frontier` and `plot scaling` (plot's page options,
 * --csv, and for frontier --anchors), then the figure argv[0] names. */
int fig_mqar_run(int argc, char **argv, const fig_front *fe)
{
    enum { O_DPI = 256, O_FONT, O_TITLE };
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' }, { "csv", required_argument, 0, 'c' },
        { "anchors", required_argument, 0, 'a' }, { "width", required_argument, 0, 'W' },
        { "height", required_argument, 0, 'E' }, { "dpi", required_argument, 0, O_DPI },
        { "font", required_argument, 0, O_FONT }, { "title", required_argument, 0, O_TITLE },
        { "threads", required_argument, 0, 'j' }, { 0, 0, 0, 0 }
    };
    const int frontier = !strcmp(argv[0], "frontier");
    fig_mqar_opts o = { 0 };
    rn_error err = { 0 };
    optind = 1;
    opterr = 0;
    int c;
    long threads = 0;
    while ((c = getopt_long(argc, argv, ":o:W:E:j:", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'o': o.out = optarg; break;
        case 'j': rc = fe->parse_long("--threads", optarg, 1, 1024, &threads, &err); break;
        case 'c': o.results = optarg; break;
        case 'a':
            if (!frontier) return fe->usage_error("plot", "--anchors is for plot frontier");
            o.anchors = optarg;
            break;
        case 'W': rc = fe->parse_double("--width", optarg, 16, 20000, &o.width, &err); break;
        case 'E': rc = fe->parse_double("--height", optarg, 16, 20000, &o.height, &err); break;
        case O_DPI: rc = fe->parse_double("--dpi", optarg, 10, 1200, &o.dpi, &err); break;
        case O_FONT: rc = fe->parse_double("--font", optarg, 4, 72, &o.font, &err); break;
        case O_TITLE: o.title = optarg; break;
        case ':': return fe->usage_error("plot", "option %s needs a value", argv[optind - 1]);
        default: return fe->usage_error("plot", "unknown option %s for plot %s", argv[optind - 1], argv[0]);
        }
        if (rc) return fe->usage_error("plot", "%s", err.msg);
    }
    if (optind < argc) return fe->usage_error("plot", "unexpected argument '%s'", argv[optind]);
    if (!o.results) return fe->usage_error("plot", "plot %s needs --csv RESULTS.csv", argv[0]);
    if (!o.out) return fe->usage_error("plot", "-o FILE is required");
    fe->threads(threads); /* accepted as everywhere; these figures draw on one thread */
    int rc = frontier ? fig_mqar_frontier(&o, &err) : fig_mqar_scaling(&o, &err);
    return rc ? fe->fail(&err) : 0;
}
