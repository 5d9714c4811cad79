{ who: 'imported from the source directory' }
