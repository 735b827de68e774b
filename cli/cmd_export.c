/* cmd_export.c — `ramtrace export`: write a run's accesses as an
 * oracleGeneral binary trace or CSV (analysis/an_export.h), or traces as a
 * Parquet dataset (export_parquet.c). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_export.h"
#include "an_load.h"
#include "cli.h"
#include "export_parquet.h"
#include "rn_atomic.h"

const char cmd_export_summary[] = "export a trace run for cache simulators (oracleGeneral, CSV) or traces as Parquet";

static const char usage[] =
    "usage: ramtrace export TRACE.db --format oraclegeneral|csv -o FILE [options]\n"
    "       ramtrace export TRACE.db... --format parquet -o DIR [options]\n"
    "\n"
    "Write a run's accesses in replay order (pos, layer, head, op, rank).\n"
    "oraclegeneral: libCacheSim's binary layout, 24-byte little-endian records\n"
    "  u32 time (token position), u64 object id, u32 size ((d_v+1)*4 bytes),\n"
    "  i64 next (1-based index of the next access to the object, -1 if none);\n"
    "  object id = layer << 40 | head << 32 | slot.\n"
    "csv: index,time,layer,head,slot,op,obj_id,next.\n"
    "parquet: every run of every TRACE.db (or --run R of each) as a new dataset\n"
    "  directory DIR: DIR/events/run=N/layer=L/part-0.parquet with columns head,\n"
    "  pos, op, rank, slot, addr, weight, token, and DIR/runs/runs.parquet\n"
    "  (docs/analysis.md); zstd pages; DIR appears complete or not at all.\n"
    "\n"
    "options:\n"
    "  -f, --format F        oraclegeneral (default), csv or parquet\n"
    "  -o, --output FILE     output file (required; written atomically); - is stdout;\n"
    "                        for parquet a directory that must not exist\n"
    "      --ops OPS         rw (default), r or w\n"
    "      --layer L         only layer L (default all)\n"
    "      --head H          only head H (default all)\n"
    "      --run R           run id (default: the latest)\n"
    "  -j, --threads N       parquet: column chunks compressed at once (default: the\n"
    "                        free cores); the other formats run on one thread\n"
    "  -h, --help            this text\n"
    "\n"
    "example: ramtrace export trace.db -o trace.oracleGeneral.bin\n"
    "         cachesim trace.oracleGeneral.bin oracleGeneral lru 1000\n";

int cmd_export(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { printf("%s", usage); return 0; }
    enum { O_RUN = 256, O_LAYER, O_HEAD, O_OPS };
    static const struct option opts[] = {
        { "run", required_argument, 0, O_RUN }, { "layer", required_argument, 0, O_LAYER },
        { "head", required_argument, 0, O_HEAD }, { "ops", required_argument, 0, O_OPS },
        { "format", required_argument, 0, 'f' }, { "output", required_argument, 0, 'o' },
        { "threads", required_argument, 0, 'j' }, { 0, 0, 0, 0 } };
    long run = 0, layer = -1, head = -1, threads = 0;
    int fmt = AN_EXPORT_ORACLEGENERAL, ops = RN_OPS_BOTH, c;
    const char *outp = NULL;
    rn_error err = { 0 };
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:j:", opts, NULL)) != -1) {
        int rc = RN_OK;
        switch (c) {
        case O_RUN: rc = cli_parse_long("--run", optarg, 1, INT32_MAX, &run, &err); break;
        case O_LAYER: rc = cli_parse_long("--layer", optarg, 0, RN_MAX_LAYERS - 1, &layer, &err); break;
        case O_HEAD: rc = cli_parse_long("--head", optarg, 0, RN_MAX_HEADS - 1, &head, &err); break;
        case O_OPS: rc = rn_ops_parse(optarg, &ops, &err); break;
        case 'f': rc = an_export_format_parse(optarg, &fmt, &err); break;
        case 'o': outp = optarg; break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break; /* one thread for now */
        case ':': return cli_usage_error(argv[0], "%s needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
        if (rc) return cli_usage_error(argv[0], "%s", err.msg);
    }
    if (fmt == AN_EXPORT_PARQUET)
        return cmd_export_parquet(argv[0], argc - optind, argv + optind, outp, run, (int)layer, (int)head, ops, threads);
    if (optind != argc - 1) return cli_usage_error(argv[0], "expected one trace database");
    if (!outp) return cli_usage_error(argv[0], "-o FILE is required");
    struct stat ost;
    if (stat(outp, &ost) == 0 && S_ISDIR(ost.st_mode)) {
        rn_seterr(&err, RN_EINPUT, "%s: is a directory (-o names the output file)", outp);
        return cli_fail(&err);
    }
    cli_install_signals();
    const char *path = argv[optind];
    an_run r;
    tr_event *ev = NULL;
    size_t n = 0;
    int rc = an_run_open(path, run, &r, &err);
    if (rc) return cli_fail(&err);
    if ((rc = an_run_check_head(&r, (int)layer, (int)head, &err))) goto out;
    if ((rc = an_run_load(&r, (int)layer, (int)head, ops, &ev, &n, &err))) goto out;
    rn_atomic_file af;
    /* `-o -`: CSV, or the oracleGeneral stream when stdout is not a terminal */
    if (!strcmp(outp, "-") && fmt != AN_EXPORT_CSV && isatty(1)) {
        rc = rn_seterr(&err, RN_EINPUT, "-o -: will not write binary oracleGeneral records to a terminal");
        goto out;
    }
    if ((rc = rn_atomic_check_not_input(path, outp, &err)) || (rc = rn_atomic_open_text(&af, outp, &err))) goto out;
    if ((rc = an_export_write(af.f, fmt, ev, n, &r.run.cfg, ops, &cli_stop_flag, &err)) || cli_stop_flag) {
        rn_atomic_abort(&af);
        if (cli_stop_flag) rc = rn_seterr(&err, RN_EINTR, "export: interrupted; %s not written", outp);
        else rn_preferr(&err, "%s", outp);
        goto out;
    }
    if ((rc = rn_atomic_commit(&af, &err))) goto out;
    cli_info("export: run %lld, %zu accesses to %s\n", (long long)r.run.run_id, n, outp);
out:
    free(ev);
    an_run_close(&r);
    return rc ? cli_fail(&err) : 0;
}
