"""memmatrix.run"""
