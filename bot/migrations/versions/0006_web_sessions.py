"""Server-side sessions: ``web_sessions`` (``bot.web.sessions``), one row per signed-in browser,
found by the SHA-256 of the cookie's random id, with the user's GitHub token encrypted
(security review N6: the cookie held the token).

Revision ID: 0006_web_sessions
Revises: 0005_visibility_evidence
Create Date: 2026-12-02 05:00:00
"""

from __future__ import annotations

from alembic import op
import sqlalchemy as sa


revision = '0006_web_sessions'
down_revision = '0005_visibility_evidence'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('web_sessions',
                    sa.Column('id_hash', sa.String(length=64), nullable=False),
                    sa.Column('login', sa.String(length=100), nullable=False),
                    sa.Column('token', sa.Text(), nullable=True),
                    sa.Column('access', sa.JSON(), nullable=False),
                    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
                    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
                    sa.PrimaryKeyConstraint('id_hash', name=op.f('pk_web_sessions')))
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_web_sessions_expires_at'), ['expires_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_web_sessions_expires_at'))
    op.drop_table('web_sessions')
