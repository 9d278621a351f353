# Writes DOCS_DIR/README.md: a list of the generated markdown files in
# DOCS_DIR, each with its title (its first `# ` heading, else its name).
# Run by the lamina-docs target after mlir-tblgen has written them.
file(GLOB_RECURSE docs RELATIVE ${DOCS_DIR} ${DOCS_DIR}/*.md)
list(REMOVE_ITEM docs README.md)
list(SORT docs)

set(index "# Lamina reference (generated)\n\n")
string(APPEND index "Generated from `dialects/` by `cmake --build build --target lamina-docs`; "
                    "do not edit. The hand-written guide is in the source tree's `docs/`.\n\n")
foreach(doc ${docs})
  file(STRINGS ${DOCS_DIR}/${doc} headings REGEX "^# ")
  if(headings)
    list(GET headings 0 title)
    string(REGEX REPLACE "^# +" "" title "${title}")
  else()
    get_filename_component(title ${doc} NAME_WE)
  endif()
  file(STRINGS ${DOCS_DIR}/${doc} entries REGEX "^### ")
  list(LENGTH entries count)
  string(APPEND index "- [${doc}](${doc}): ${title} (${count} entries)\n")
endforeach()

# Rewrite only on change, so that the index keeps its time stamp otherwise.
set(old "")
if(EXISTS ${DOCS_DIR}/README.md)
  file(READ ${DOCS_DIR}/README.md old)
endif()
if(NOT old STREQUAL index)
  file(WRITE ${DOCS_DIR}/README.md "${index}")
endif()
