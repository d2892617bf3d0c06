build/obj/runner/core/util.o: runner/core/util.c runner/core/util.h
runner/core/util.h:
