/* sizeclass.c - the bin tables. */
#include "sizeclass.h"

#include "sizeclass_tables.h"
