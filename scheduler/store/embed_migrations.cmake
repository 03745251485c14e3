# Writes OUT: a C++ file defining AllMigrations() from the .sql files in
# MIGRATIONS (a ;-list of paths named NNNN_verb_object.sql).
string(REPLACE "|" ";" MIGRATIONS "${MIGRATIONS}")
list(SORT MIGRATIONS)
set(body "")
foreach(path IN LISTS MIGRATIONS)
  get_filename_component(name ${path} NAME_WE)
  string(SUBSTRING ${name} 0 4 version)
  math(EXPR version "${version}")
  file(READ ${path} sql)
  string(APPEND body "      {${version}, \"${name}\", R\"tupa_sql(${sql})tupa_sql\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "// Generated from scheduler/store/migrations/*.sql. Do not edit.
#include \"scheduler/store/migrations.h\"

namespace tupa::scheduler {

const std::vector<Migration>& AllMigrations() {
  static const auto* migrations = new std::vector<Migration>{
${body}  };
  return *migrations;
}

}  // namespace tupa::scheduler
")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
