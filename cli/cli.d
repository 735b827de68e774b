/work/wt-anneal/cli/cli.o: cli/cli.c cli/cli.h core/rn_error.h \
 core/rn_state.h core/rn_config.h core/rn_error.h core/rn_real.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 analysis/an_stop.h core/rn_atomic.h core/rn_threads.h trace/tr_query.h \
 core/rn_rows.h
cli/cli.h:
core/rn_error.h:
core/rn_state.h:
core/rn_config.h:
core/rn_error.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
analysis/an_stop.h:
core/rn_atomic.h:
core/rn_threads.h:
trace/tr_query.h:
core/rn_rows.h:
