/work/wt-anneal/cli/cmd_plot.o: cli/cmd_plot.c /usr/include/cairo/cairo.h \
 /usr/include/cairo/cairo-version.h /usr/include/cairo/cairo-features.h \
 /usr/include/cairo/cairo-deprecated.h cli/cli.h core/rn_error.h \
 core/rn_state.h core/rn_config.h core/rn_error.h core/rn_real.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 figure/fig_figure.h analysis/an_simrun.h analysis/an_cache.h \
 analysis/an_stream.h core/rn_config.h core/rn_probe.h trace/tr_reader.h \
 core/rn_cache.h analysis/an_mrc.h analysis/an_spill.h analysis/an_load.h \
 viz/viz_colormap.h viz/viz_style.h
/usr/include/cairo/cairo.h:
/usr/include/cairo/cairo-version.h:
/usr/include/cairo/cairo-features.h:
/usr/include/cairo/cairo-deprecated.h:
cli/cli.h:
core/rn_error.h:
core/rn_state.h:
core/rn_config.h:
core/rn_error.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
figure/fig_figure.h:
analysis/an_simrun.h:
analysis/an_cache.h:
analysis/an_stream.h:
core/rn_config.h:
core/rn_probe.h:
trace/tr_reader.h:
core/rn_cache.h:
analysis/an_mrc.h:
analysis/an_spill.h:
analysis/an_load.h:
viz/viz_colormap.h:
viz/viz_style.h:
