build/obj/runner/cli.o: runner/cli.c runner/options.h runner/core/err.h \
 runner/core/strv.h runner/core/util.h
runner/options.h:
runner/core/err.h:
runner/core/strv.h:
runner/core/util.h:
