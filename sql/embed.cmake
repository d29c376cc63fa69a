# Writes every sql/migrations/*.sql and sql/queries/*.sql into one C++ file as
# raw string literals, keyed by "migrations/0001_x.sql" etc. Run by the build.
file(GLOB files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/migrations/*.sql ${SOURCE_DIR}/queries/*.sql)
list(SORT files)
set(body "// Generated from sql/ by sql/embed.cmake. Do not edit.\n#include \"locks/sql_files.h\"\n\nnamespace paintlock::locks {\n\nconst std::map<std::string, std::string>& SqlFiles() {\n  static const std::map<std::string, std::string> files = {\n")
foreach(f ${files})
  file(READ ${SOURCE_DIR}/${f} content)
  string(APPEND body "    {\"${f}\", R\"paintlock_sql(${content})paintlock_sql\"},\n")
endforeach()
string(APPEND body "  };\n  return files;\n}\n\n}  // namespace paintlock::locks\n")
file(WRITE ${OUTPUT}.tmp "${body}")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
